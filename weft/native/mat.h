// weft matrix builtins: the forward and adjoint C++ of every builtin on mat_t<R, C, T>
// (row-major, data[i][j] = row i, column j). Conventions as in vec.h: constructors take the
// result type as their first explicit template argument, component access takes `loc`, adjoints
// take an adjoint reference for every input and only accumulate.
//
// Types: T is any scalar for construction, indexing, + - * /, comparisons, where and atomics;
// determinant, inverse and the other linear algebra are for float T. Products accumulate in
// float32 for float16 and in wrapping unsigned arithmetic for ints (see vec.h).
//
// Semantics, checked against warp-lang 1.19 on the CPU:
//   - m[i] is row i; indices wrap like Python (m[-1] is the last row); m[i] = row and m[i, j] = s
//     are copies (assign_copy).
//   - mul(m, v) is the matrix times a column vector, mul(v, m) a row vector times the matrix;
//     s / m is component-wise.
//   - inverse of a singular matrix (determinant exactly 0, no epsilon) is the zero matrix, and its
//     gradient there is zero. 2x2 uses the adjugate formula (so off-diagonal zeros print "-0",
//     like Warp), 3x3 the cofactors, 4x4 the cofactors and one Newton step (inverse_of: the
//     4x4 cofactors alone lose up to 10x more to rounding on ill-conditioned float32 matrices).
//   - determinant of a 4x4 float32/float16 matrix: in float64, rounded once (correctly rounded).
//   - print: one row per line, every component followed by a space ("1 2 \n3 4 "); the caller
//     adds the final newline.
//   - skew(v) = [[0, -z, y], [z, 0, -x], [-y, x, 0]]; ddot(a, b) = sum a_ij b_ij;
//     outer(a, b) = a b^T; trace and get_diag take the diagonal's min(R, C) terms; atomics per
//     component.
// Extension over Warp 1.19: cmp_ne on matrices.
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::, no lambdas.
#pragma once

#include "scalar.h"
#include "vec_types.h"
#include "vec.h"

namespace weft {

template <typename M>
struct mat_traits;
template <unsigned R, unsigned C, typename T>
struct mat_traits<mat_t<R, C, T>> {
    static constexpr unsigned rows = R;
    static constexpr unsigned cols = C;
    typedef T scalar;
};

// adj += m * s component-wise for float T; integer matrices take no gradient.
template <unsigned R, unsigned C, typename T, typename S>
WEFT_FN void mat_accum_scaled(mat_t<R, C, T>& adj, const mat_t<R, C, T>& m, S s) {
    if constexpr (scalar_traits<T>::is_float)
        for (unsigned i = 0; i < R; ++i)
            for (unsigned j = 0; j < C; ++j) accum(adj.data[i][j], compute_t<T>(S(m.data[i][j]) * s));
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void mat_accum(mat_t<R, C, T>& adj, const mat_t<R, C, T>& g) {
    mat_accum_scaled(adj, g, compute_t<T>(1));
}

namespace vec_detail {
template <unsigned R, unsigned C, typename T>
WEFT_FN void set_row(mat_t<R, C, T>& m, unsigned i, const vec_t<C, T>& v) {
    for (unsigned j = 0; j < C; ++j) m.data[i][j] = v.c[j];
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void set_col(mat_t<R, C, T>& m, unsigned j, const vec_t<R, T>& v) {
    for (unsigned i = 0; i < R; ++i) m.data[i][j] = v.c[i];
}

}  // namespace vec_detail

template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T>& operator-=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) a.data[i][j] = sub(a.data[i][j], b.data[i][j]);
    return a;
}

// ---------------------------------------------------------------------------------------------
// Construction: mat_zero<M>(), mat_fill<M>(s), mat_make<M>(a00, a01, ...) (row-major),
// mat_from_rows<M>(r0, ...), mat_from_cols<M>(c0, ...), mat_convert<M>(m), identity<M>().

template <typename M>
WEFT_FN M mat_zero() {
    return M();
}
template <typename M>
WEFT_FN void adj_mat_zero(const M& adj_ret) {}

template <typename M, typename S>
WEFT_FN M mat_fill(S s) {
    typedef typename mat_traits<M>::scalar T;
    M r;
    for (unsigned i = 0; i < mat_traits<M>::rows; ++i)
        for (unsigned j = 0; j < mat_traits<M>::cols; ++j) r.data[i][j] = T(s);
    return r;
}
template <typename M, typename S>
WEFT_FN void adj_mat_fill(S s, S& adj_s, const M& adj_ret) {
    typedef typename mat_traits<M>::scalar T;
    if constexpr (scalar_traits<T>::is_float) {
        compute_t<T> sum = 0;
        for (unsigned i = 0; i < mat_traits<M>::rows; ++i)
            for (unsigned j = 0; j < mat_traits<M>::cols; ++j) sum += compute_t<T>(adj_ret.data[i][j]);
        vec_detail::accum_from(adj_s, sum);
    }
}

template <typename M>
WEFT_FN M identity() {
    typedef typename mat_traits<M>::scalar T;
    static_assert(mat_traits<M>::rows == mat_traits<M>::cols, "identity: square matrices only");
    M r;
    for (unsigned i = 0; i < mat_traits<M>::rows; ++i) r.data[i][i] = T(1);
    return r;
}
template <typename M>
WEFT_FN void adj_identity(const M& adj_ret) {}

template <typename M, typename... S>
WEFT_FN M mat_make(S... s) {
    typedef typename mat_traits<M>::scalar T;
    constexpr unsigned C = mat_traits<M>::cols;
    static_assert(sizeof...(S) == mat_traits<M>::rows * C, "mat_make: one argument per component, row-major");
    M r;
    unsigned k = 0;
    ((r.data[k / C][k % C] = T(s), ++k), ...);
    return r;
}

template <typename M, typename... V>
WEFT_FN M mat_from_rows(const V&... rows) {
    static_assert(sizeof...(V) == mat_traits<M>::rows, "mat_from_rows: one vector per row");
    M r;
    unsigned i = 0;
    ((vec_detail::set_row(r, i++, rows)), ...);
    return r;
}

template <typename M, typename... V>
WEFT_FN M mat_from_cols(const V&... cols) {
    static_assert(sizeof...(V) == mat_traits<M>::cols, "mat_from_cols: one vector per column");
    M r;
    unsigned j = 0;
    ((vec_detail::set_col(r, j++, cols)), ...);
    return r;
}

namespace vec_detail {

struct part_mat_component {
    template <typename A, unsigned R, unsigned C, typename T>
    static WEFT_FN void add_part(A& adj, const mat_t<R, C, T>& adj_ret, unsigned k) {
        accum_from(adj, adj_ret.data[k / C][k % C]);
    }
};
struct part_mat_row {
    template <unsigned R, unsigned C, typename T>
    static WEFT_FN void add_part(vec_t<C, T>& adj, const mat_t<R, C, T>& adj_ret, unsigned i) {
        for (unsigned j = 0; j < C; ++j) accum_from(adj.c[j], adj_ret.data[i][j]);
    }
};
struct part_mat_col {
    template <unsigned R, unsigned C, typename T>
    static WEFT_FN void add_part(vec_t<R, T>& adj, const mat_t<R, C, T>& adj_ret, unsigned j) {
        for (unsigned i = 0; i < R; ++i) accum_from(adj.c[i], adj_ret.data[i][j]);
    }
};

}  // namespace vec_detail

// adj_mat_make<M>(a00.., adj_a00&.., adj_ret); adj_mat_from_rows<M>(r0.., adj_r0&.., adj_ret); ...
template <typename M, typename... A>
WEFT_FN void adj_mat_make(A&&... args) {
    vec_detail::adj_make<mat_traits<M>::rows * mat_traits<M>::cols, vec_detail::part_mat_component, M>(args...);
}
template <typename M, typename... A>
WEFT_FN void adj_mat_from_rows(A&&... args) {
    vec_detail::adj_make<mat_traits<M>::rows, vec_detail::part_mat_row, M>(args...);
}
template <typename M, typename... A>
WEFT_FN void adj_mat_from_cols(A&&... args) {
    vec_detail::adj_make<mat_traits<M>::cols, vec_detail::part_mat_col, M>(args...);
}

// Component-wise cast; float -> float passes the gradient.
template <typename M, unsigned R, unsigned C, typename S>
WEFT_FN M mat_convert(const mat_t<R, C, S>& m) {
    typedef typename mat_traits<M>::scalar T;
    static_assert(mat_traits<M>::rows == R && mat_traits<M>::cols == C, "mat_convert: same shape");
    M r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[i][j] = cast<T>(m.data[i][j]);
    return r;
}
template <typename M, unsigned R, unsigned C, typename S>
WEFT_FN void adj_mat_convert(const mat_t<R, C, S>& m, mat_t<R, C, S>& adj_m, const M& adj_ret) {
    typedef typename mat_traits<M>::scalar T;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) adj_cast<T>(m.data[i][j], adj_m.data[i][j], adj_ret.data[i][j]);
}

// ---------------------------------------------------------------------------------------------
// Component access: extract(m, loc, i) -> row i, extract(m, loc, i, j) -> component,
// assign_copy(m, loc, i, row), assign_copy(m, loc, i, j, s).

template <unsigned R, unsigned C, typename T, typename I>
WEFT_FN vec_t<C, T> extract(const mat_t<R, C, T>& m, int32 loc, I i) {
    int r = component_index(loc, i, R);
    vec_t<C, T> v;
    for (unsigned j = 0; j < C; ++j) v.c[j] = m.data[r][j];
    return v;
}
template <unsigned R, unsigned C, typename T, typename I>
WEFT_FN void adj_extract(const mat_t<R, C, T>& m, int32 loc, I i, mat_t<R, C, T>& adj_m, int32& adj_loc, I& adj_i,
                         const vec_t<C, T>& adj_ret) {
    int r = component_index(loc, i, R);
    for (unsigned j = 0; j < C; ++j) vec_detail::accum_from(adj_m.data[r][j], adj_ret.c[j]);
}

template <unsigned R, unsigned C, typename T, typename I, typename J>
WEFT_FN T extract(const mat_t<R, C, T>& m, int32 loc, I i, J j) {
    int r = component_index(loc, i, R);
    return m.data[r][component_index(loc, j, C)];
}
template <unsigned R, unsigned C, typename T, typename I, typename J>
WEFT_FN void adj_extract(const mat_t<R, C, T>& m, int32 loc, I i, J j, mat_t<R, C, T>& adj_m, int32& adj_loc,
                         I& adj_i, J& adj_j, T adj_ret) {
    int r = component_index(loc, i, R);
    vec_detail::accum_from(adj_m.data[r][component_index(loc, j, C)], adj_ret);
}

template <unsigned R, unsigned C, typename T, typename I>
WEFT_FN mat_t<R, C, T> assign_copy(const mat_t<R, C, T>& m, int32 loc, I i, const vec_t<C, T>& row) {
    mat_t<R, C, T> out = m;
    vec_detail::set_row(out, component_index(loc, i, R), row);
    return out;
}
template <unsigned R, unsigned C, typename T, typename I>
WEFT_FN void adj_assign_copy(const mat_t<R, C, T>& m, int32 loc, I i, const vec_t<C, T>& row, mat_t<R, C, T>& adj_m,
                             int32& adj_loc, I& adj_i, vec_t<C, T>& adj_row, const mat_t<R, C, T>& adj_ret) {
    unsigned r = component_index(loc, i, R);
    for (unsigned a = 0; a < R; ++a)
        for (unsigned b = 0; b < C; ++b) {
            if (a == r)
                vec_detail::accum_from(adj_row.c[b], adj_ret.data[a][b]);
            else
                vec_detail::accum_from(adj_m.data[a][b], adj_ret.data[a][b]);
        }
}

template <unsigned R, unsigned C, typename T, typename I, typename J, typename S>
WEFT_FN mat_t<R, C, T> assign_copy(const mat_t<R, C, T>& m, int32 loc, I i, J j, S value) {
    mat_t<R, C, T> out = m;
    int r = component_index(loc, i, R);
    out.data[r][component_index(loc, j, C)] = T(value);
    return out;
}
template <unsigned R, unsigned C, typename T, typename I, typename J, typename S>
WEFT_FN void adj_assign_copy(const mat_t<R, C, T>& m, int32 loc, I i, J j, S value, mat_t<R, C, T>& adj_m,
                             int32& adj_loc, I& adj_i, J& adj_j, S& adj_value, const mat_t<R, C, T>& adj_ret) {
    unsigned r = component_index(loc, i, R);
    unsigned c = component_index(loc, j, C);
    for (unsigned a = 0; a < R; ++a)
        for (unsigned b = 0; b < C; ++b) {
            if (a == r && b == c)
                vec_detail::accum_from(adj_value, adj_ret.data[a][b]);
            else
                vec_detail::accum_from(adj_m.data[a][b], adj_ret.data[a][b]);
        }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic: add sub neg pos, mul/div by a scalar, s / m, cw_mul, cw_div (component-wise,
// through the scalar builtins), and the products m * v, v * m, m * m.

// Component-wise unary and binary functions through scalar ones (forward only);
// WEFT_MAT_BINARY_CW adds the binary one's adjoint.
#define WEFT_MAT_CW1(name)                                                                                      \
    template <unsigned R, unsigned C, typename T>                                                               \
    WEFT_FN mat_t<R, C, T> name(const mat_t<R, C, T>& a) {                                                      \
        mat_t<R, C, T> r;                                                                                       \
        for (unsigned i = 0; i < R; ++i)                                                                        \
            for (unsigned j = 0; j < C; ++j) r.data[i][j] = name(a.data[i][j]);                                 \
        return r;                                                                                               \
    }
#define WEFT_MAT_CW2(name, scalar_fn)                                                                           \
    template <unsigned R, unsigned C, typename T>                                                               \
    WEFT_FN mat_t<R, C, T> name(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {                            \
        mat_t<R, C, T> r;                                                                                       \
        for (unsigned i = 0; i < R; ++i)                                                                        \
            for (unsigned j = 0; j < C; ++j) r.data[i][j] = scalar_fn(a.data[i][j], b.data[i][j]);              \
        return r;                                                                                               \
    }
#define WEFT_MAT_BINARY_CW(name, scalar_fn)                                                                     \
    WEFT_MAT_CW2(name, scalar_fn)                                                                               \
    template <unsigned R, unsigned C, typename T>                                                               \
    WEFT_FN void adj_##name(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,            \
                            mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {                             \
        for (unsigned i = 0; i < R; ++i)                                                                        \
            for (unsigned j = 0; j < C; ++j)                                                                    \
                adj_##scalar_fn(a.data[i][j], b.data[i][j], adj_a.data[i][j], adj_b.data[i][j], adj_ret.data[i][j]); \
    }
WEFT_MAT_BINARY_CW(add, add)
WEFT_MAT_BINARY_CW(sub, sub)
WEFT_MAT_BINARY_CW(cw_mul, mul)
WEFT_MAT_BINARY_CW(cw_div, div)
#undef WEFT_MAT_BINARY_CW

WEFT_MAT_CW1(neg)
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_neg(const mat_t<R, C, T>& a, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) {
    mat_accum_scaled(adj_a, adj_ret, compute_t<T>(-1));
}

template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> pos(const mat_t<R, C, T>& a) {
    return a;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_pos(const mat_t<R, C, T>& a, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) {
    mat_accum(adj_a, adj_ret);
}

namespace vec_detail {
template <unsigned R, unsigned C, typename T>
WEFT_FN compute_t<T> ddot_r(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    compute_t<T> s = 0;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) s += compute_t<T>(a.data[i][j]) * compute_t<T>(b.data[i][j]);
    return s;
}
}  // namespace vec_detail

template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> mul(const mat_t<R, C, T>& a, T s) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[i][j] = mul(a.data[i][j], s);
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> mul(T s, const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[i][j] = mul(s, a.data[i][j]);
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_mul(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s, const mat_t<R, C, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        mat_accum_scaled(adj_a, adj_ret, compute_t<T>(s));
        accum(adj_s, vec_detail::ddot_r(a, adj_ret));
    }
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_mul(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}

template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> div(const mat_t<R, C, T>& a, T s) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[i][j] = div(a.data[i][j], s);
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_div(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s, const mat_t<R, C, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> Rt;
        mat_accum_scaled(adj_a, adj_ret, Rt(1) / Rt(s));
        accum(adj_s, -vec_detail::ddot_r(a, adj_ret) / (Rt(s) * Rt(s)));
    }
}

// s / m component-wise.
template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> div(T s, const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[i][j] = div(s, a.data[i][j]);
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_div(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) adj_div(s, a.data[i][j], adj_s, adj_a.data[i][j], adj_ret.data[i][j]);
}

// m * v (v a column vector).
template <unsigned R, unsigned C, typename T>
WEFT_FN vec_t<R, T> mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v) {
    using vec_detail::acc;
    vec_t<R, T> r;
    for (unsigned i = 0; i < R; ++i) {
        vec_detail::acc_t<T> s = 0;
        for (unsigned j = 0; j < C; ++j) s += acc(m.data[i][j]) * acc(v.c[j]);
        r.c[i] = T(s);
    }
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v, mat_t<R, C, T>& adj_m, vec_t<C, T>& adj_v,
                     const vec_t<R, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> Rt;
        for (unsigned j = 0; j < C; ++j) {
            Rt s = 0;
            for (unsigned i = 0; i < R; ++i) {
                accum(adj_m.data[i][j], Rt(adj_ret.c[i]) * Rt(v.c[j]));
                s += Rt(m.data[i][j]) * Rt(adj_ret.c[i]);
            }
            accum(adj_v.c[j], s);
        }
    }
}

// v * m (v a row vector).
template <unsigned R, unsigned C, typename T>
WEFT_FN vec_t<C, T> mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m) {
    using vec_detail::acc;
    vec_t<C, T> r;
    for (unsigned j = 0; j < C; ++j) {
        vec_detail::acc_t<T> s = 0;
        for (unsigned i = 0; i < R; ++i) s += acc(v.c[i]) * acc(m.data[i][j]);
        r.c[j] = T(s);
    }
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m, vec_t<R, T>& adj_v, mat_t<R, C, T>& adj_m,
                     const vec_t<C, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> Rt;
        for (unsigned i = 0; i < R; ++i) {
            Rt s = 0;
            for (unsigned j = 0; j < C; ++j) {
                accum(adj_m.data[i][j], Rt(v.c[i]) * Rt(adj_ret.c[j]));
                s += Rt(m.data[i][j]) * Rt(adj_ret.c[j]);
            }
            accum(adj_v.c[i], s);
        }
    }
}

// a * b: (R x K) (K x C). The square overload exists because for two operands of one type
// scalar.h's `mul(T, T)` is as specialized as the general (R, K, C) form: the square form is more
// specialized than both and so is chosen.
namespace vec_detail {
template <unsigned R, unsigned K, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> matmul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) {
            acc_t<T> s = 0;
            for (unsigned k = 0; k < K; ++k) s += acc(a.data[i][k]) * acc(b.data[k][j]);
            r.data[i][j] = T(s);
        }
    return r;
}
// adj_a += adj_ret b^T, adj_b += a^T adj_ret.
template <unsigned R, unsigned K, unsigned C, typename T>
WEFT_FN void adj_matmul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b, mat_t<R, K, T>& adj_a, mat_t<K, C, T>& adj_b,
                        const mat_t<R, C, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> Rt;
        for (unsigned i = 0; i < R; ++i)
            for (unsigned k = 0; k < K; ++k) {
                Rt s = 0;
                for (unsigned j = 0; j < C; ++j) s += Rt(adj_ret.data[i][j]) * Rt(b.data[k][j]);
                accum(adj_a.data[i][k], s);
            }
        for (unsigned k = 0; k < K; ++k)
            for (unsigned j = 0; j < C; ++j) {
                Rt s = 0;
                for (unsigned i = 0; i < R; ++i) s += Rt(a.data[i][k]) * Rt(adj_ret.data[i][j]);
                accum(adj_b.data[k][j], s);
            }
    }
}
}  // namespace vec_detail

template <unsigned R, unsigned K, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) {
    return vec_detail::matmul(a, b);
}
template <unsigned N, typename T>
WEFT_FN mat_t<N, N, T> mul(const mat_t<N, N, T>& a, const mat_t<N, N, T>& b) {
    return vec_detail::matmul(a, b);
}
template <unsigned R, unsigned K, unsigned C, typename T>
WEFT_FN void adj_mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b, mat_t<R, K, T>& adj_a, mat_t<K, C, T>& adj_b,
                     const mat_t<R, C, T>& adj_ret) {
    vec_detail::adj_matmul(a, b, adj_a, adj_b, adj_ret);
}
template <unsigned N, typename T>
WEFT_FN void adj_mul(const mat_t<N, N, T>& a, const mat_t<N, N, T>& b, mat_t<N, N, T>& adj_a, mat_t<N, N, T>& adj_b,
                     const mat_t<N, N, T>& adj_ret) {
    vec_detail::adj_matmul(a, b, adj_a, adj_b, adj_ret);
}

// ---------------------------------------------------------------------------------------------
// Comparisons of whole matrices (not differentiable).

template <unsigned R, unsigned C, typename T>
WEFT_FN bool cmp_eq(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j)
            if (!cmp_eq(a.data[i][j], b.data[i][j])) return false;
    return true;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN bool cmp_ne(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    return !cmp_eq(a, b);
}

// ---------------------------------------------------------------------------------------------
// Linear algebra: transpose, trace, diag, get_diag, skew, outer, ddot, determinant, inverse.

template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<C, R, T> transpose(const mat_t<R, C, T>& a) {
    mat_t<C, R, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[j][i] = a.data[i][j];
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_transpose(const mat_t<R, C, T>& a, mat_t<R, C, T>& adj_a, const mat_t<C, R, T>& adj_ret) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) vec_detail::accum_from(adj_a.data[i][j], adj_ret.data[j][i]);
}

template <unsigned R, unsigned C, typename T>
WEFT_FN T trace(const mat_t<R, C, T>& a) {
    vec_detail::acc_t<T> s = 0;
    for (unsigned i = 0; i < R && i < C; ++i) s += vec_detail::acc(a.data[i][i]);
    return T(s);
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_trace(const mat_t<R, C, T>& a, mat_t<R, C, T>& adj_a, T adj_ret) {
    for (unsigned i = 0; i < R && i < C; ++i) vec_detail::accum_from(adj_a.data[i][i], adj_ret);
}

template <unsigned N, typename T>
WEFT_FN mat_t<N, N, T> diag(const vec_t<N, T>& v) {
    mat_t<N, N, T> r;
    for (unsigned i = 0; i < N; ++i) r.data[i][i] = v.c[i];
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_diag(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const mat_t<N, N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) vec_detail::accum_from(adj_v.c[i], adj_ret.data[i][i]);
}

// The diagonal m[i][i], i < min(R, C).
template <unsigned R, unsigned C, typename T>
WEFT_FN vec_t<(R < C ? R : C), T> get_diag(const mat_t<R, C, T>& m) {
    vec_t<(R < C ? R : C), T> r;
    for (unsigned i = 0; i < R && i < C; ++i) r.c[i] = m.data[i][i];
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_get_diag(const mat_t<R, C, T>& m, mat_t<R, C, T>& adj_m, const vec_t<(R < C ? R : C), T>& adj_ret) {
    for (unsigned i = 0; i < R && i < C; ++i) vec_detail::accum_from(adj_m.data[i][i], adj_ret.c[i]);
}

template <typename T>
WEFT_FN mat_t<3, 3, T> skew(const vec_t<3, T>& v) {
    mat_t<3, 3, T> r;
    r.data[0][1] = neg(v.c[2]);
    r.data[0][2] = v.c[1];
    r.data[1][0] = v.c[2];
    r.data[1][2] = neg(v.c[0]);
    r.data[2][0] = neg(v.c[1]);
    r.data[2][1] = v.c[0];
    return r;
}
template <typename T>
WEFT_FN void adj_skew(const vec_t<3, T>& v, vec_t<3, T>& adj_v, const mat_t<3, 3, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> R;
        accum(adj_v.c[0], R(adj_ret.data[2][1]) - R(adj_ret.data[1][2]));
        accum(adj_v.c[1], R(adj_ret.data[0][2]) - R(adj_ret.data[2][0]));
        accum(adj_v.c[2], R(adj_ret.data[1][0]) - R(adj_ret.data[0][1]));
    }
}

template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> outer(const vec_t<R, T>& a, const vec_t<C, T>& b) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[i][j] = mul(a.c[i], b.c[j]);
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_outer(const vec_t<R, T>& a, const vec_t<C, T>& b, vec_t<R, T>& adj_a, vec_t<C, T>& adj_b,
                       const mat_t<R, C, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> Rt;
        for (unsigned i = 0; i < R; ++i) {
            Rt s = 0;
            for (unsigned j = 0; j < C; ++j) s += Rt(adj_ret.data[i][j]) * Rt(b.c[j]);
            accum(adj_a.c[i], s);
        }
        for (unsigned j = 0; j < C; ++j) {
            Rt s = 0;
            for (unsigned i = 0; i < R; ++i) s += Rt(adj_ret.data[i][j]) * Rt(a.c[i]);
            accum(adj_b.c[j], s);
        }
    }
}

template <unsigned R, unsigned C, typename T>
WEFT_FN T ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    vec_detail::acc_t<T> s = 0;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) s += vec_detail::acc(a.data[i][j]) * vec_detail::acc(b.data[i][j]);
    return T(s);
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a, mat_t<R, C, T>& adj_b,
                      T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        mat_accum_scaled(adj_a, b, compute_t<T>(adj_ret));
        mat_accum_scaled(adj_b, a, compute_t<T>(adj_ret));
    }
}

// Cofactor matrices (cof[i][j] = (-1)^(i+j) minor(i, j)), in the compute type. For 3x3 the
// cyclic index form carries the sign; for 4x4 the sign is applied by subtraction from zero so
// that zero cofactors stay +0.
namespace vec_detail {

template <typename T>
WEFT_FN void cofactor(const mat_t<2, 2, T>& m, compute_t<T> (&cof)[2][2]) {
    typedef compute_t<T> R;
    cof[0][0] = R(m.data[1][1]);
    cof[0][1] = -R(m.data[1][0]);
    cof[1][0] = -R(m.data[0][1]);
    cof[1][1] = R(m.data[0][0]);
}

template <typename T>
WEFT_FN void cofactor(const mat_t<3, 3, T>& m, compute_t<T> (&cof)[3][3]) {
    typedef compute_t<T> R;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            cof[i][j] = R(m.data[i1][j1]) * R(m.data[i2][j2]) - R(m.data[i1][j2]) * R(m.data[i2][j1]);
        }
}

template <typename T>
WEFT_FN void cofactor(const mat_t<4, 4, T>& m, compute_t<T> (&cof)[4][4]) {
    typedef compute_t<T> R;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            // The 3x3 minor without row i and column j.
            R s[3][3];
            for (int a = 0, sa = 0; a < 4; ++a) {
                if (a == i) continue;
                for (int b = 0, sb = 0; b < 4; ++b) {
                    if (b == j) continue;
                    s[sa][sb++] = R(m.data[a][b]);
                }
                ++sa;
            }
            R minor = s[0][0] * (s[1][1] * s[2][2] - s[1][2] * s[2][1]) -
                      s[0][1] * (s[1][0] * s[2][2] - s[1][2] * s[2][0]) +
                      s[0][2] * (s[1][0] * s[2][1] - s[1][1] * s[2][0]);
            cof[i][j] = ((i + j) & 1) ? R(0) - minor : minor;
        }
}

// det = sum_j m[0][j] cof[0][j].
template <unsigned N, typename T>
WEFT_FN compute_t<T> det_from_cofactors(const mat_t<N, N, T>& m, const compute_t<T> (&cof)[N][N]) {
    compute_t<T> d = 0;
    for (unsigned j = 0; j < N; ++j) d += compute_t<T>(m.data[0][j]) * cof[0][j];
    return d;
}

// The inverse in compute_t<T>, or the zero matrix (and false) when the determinant is exactly 0:
// the adjugate over the determinant, then for 4x4 one Newton step X += X (I - M X), which removes
// most of the rounding the 4x4 cofactors leave on ill-conditioned float32 matrices (about 10x
// less, for 128 more multiply-adds). Selects, not branches: a loop over elements that inverts a
// matrix each (an FEM assembly's deformation gradients) vectorises.
template <unsigned N, typename T>
WEFT_FN bool inverse_of(const mat_t<N, N, T>& m, compute_t<T> (&inv)[N][N]) {
    typedef compute_t<T> R;
    R cof[N][N];
    cofactor(m, cof);
    R d = det_from_cofactors(m, cof);
    const bool regular = d != R(0);
    R inv_d = R(1) / (regular ? d : R(1));
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) inv[i][j] = regular ? cof[j][i] * inv_d : R(0);
    if constexpr (N == 4) {
        R res[N][N];  // I - M X
        for (unsigned i = 0; i < N; ++i)
            for (unsigned j = 0; j < N; ++j) {
                R s = R(i == j ? 1 : 0);
                for (unsigned k = 0; k < N; ++k) s -= R(m.data[i][k]) * inv[k][j];
                res[i][j] = s;
            }
        R next[N][N];
        for (unsigned i = 0; i < N; ++i)
            for (unsigned j = 0; j < N; ++j) {
                R s = inv[i][j];
                for (unsigned k = 0; k < N; ++k) s += inv[i][k] * res[k][j];
                next[i][j] = s;
            }
        for (unsigned i = 0; i < N; ++i)
            for (unsigned j = 0; j < N; ++j) inv[i][j] = regular ? next[i][j] : R(0);
    }
    return regular;
}

}  // namespace vec_detail

template <unsigned N, typename T>
WEFT_FN T determinant(const mat_t<N, N, T>& m) {
    static_assert(N >= 2 && N <= 4, "determinant: 2x2, 3x3 and 4x4 matrices");
    if constexpr (N == 4 && sizeof(compute_t<T>) < 8) {
        // 4x4 in float32: 40 products of three factors, whose rounding errors cancelled badly
        // (finite differences of a determinant near 1 were off by 0.3 %); in float64, rounded once
        mat_t<4, 4, double> w;
        for (unsigned i = 0; i < 4; ++i)
            for (unsigned j = 0; j < 4; ++j) w.data[i][j] = double(m.data[i][j]);
        double cof[4][4];
        vec_detail::cofactor(w, cof);
        return T(vec_detail::det_from_cofactors(w, cof));
    } else {
        compute_t<T> cof[N][N];
        vec_detail::cofactor(m, cof);
        return T(vec_detail::det_from_cofactors(m, cof));
    }
}
// d det / d m = cofactor matrix.
template <unsigned N, typename T>
WEFT_FN void adj_determinant(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, T adj_ret) {
    typedef compute_t<T> R;
    R cof[N][N];
    vec_detail::cofactor(m, cof);
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) accum(adj_m.data[i][j], cof[i][j] * R(adj_ret));
}

// inverse = adjugate / det (adjugate = cofactor^T, refined for 4x4: inverse_of); the zero matrix
// when det == 0.
template <unsigned N, typename T>
WEFT_FN mat_t<N, N, T> inverse(const mat_t<N, N, T>& m) {
    static_assert(N >= 2 && N <= 4, "inverse: 2x2, 3x3 and 4x4 matrices");
    compute_t<T> inv[N][N];
    mat_t<N, N, T> r;
    vec_detail::inverse_of(m, inv);
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) r.data[i][j] = T(inv[i][j]);
    return r;
}
// d(m^-1) = -m^-1 dm m^-1, so adj_m += -inv^T adj_ret inv^T. Zero for a singular matrix (adj_m
// kept as it is, by a select).
template <unsigned N, typename T>
WEFT_FN void adj_inverse(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const mat_t<N, N, T>& adj_ret) {
    typedef compute_t<T> R;
    R inv[N][N], tmp[N][N];
    const bool regular = vec_detail::inverse_of(m, inv);
    // tmp = inv^T adj_ret
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) {
            R s = 0;
            for (unsigned k = 0; k < N; ++k) s += inv[k][i] * R(adj_ret.data[k][j]);
            tmp[i][j] = s;
        }
    // adj_m -= tmp inv^T
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) {
            R s = 0;
            for (unsigned k = 0; k < N; ++k) s += tmp[i][k] * inv[j][k];
            const R kept = R(adj_m.data[i][j]);
            adj_m.data[i][j] = T(regular ? kept - s : kept);
        }
}

// ---------------------------------------------------------------------------------------------
// Printing: one row per line, each component followed by a space; no final newline.

template <unsigned R, unsigned C, typename T>
WEFT_FN void print_value(const mat_t<R, C, T>& m) {
    for (unsigned i = 0; i < R; ++i) {
        if (i > 0) printf("\n");
        for (unsigned j = 0; j < C; ++j) {
            print_value(m.data[i][j]);
            printf(" ");
        }
    }
}

template <unsigned R, unsigned C, typename T>
WEFT_FN void expect_near(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T tolerance) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j)
            if (!near_(a.data[i][j], b.data[i][j], tolerance)) {
                expect_report("expect_near", a, b);
                return;
            }
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void expect_near(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    expect_near(a, b, T(1e-6));
}

// ---------------------------------------------------------------------------------------------
// Atomics, per component (see vec.h).

#define WEFT_MAT_ATOMIC(name)                                                         \
    template <unsigned R, unsigned C, typename T>                                     \
    WEFT_FN mat_t<R, C, T> name(mat_t<R, C, T>* p, mat_t<R, C, T> v) {                \
        mat_t<R, C, T> old;                                                           \
        for (unsigned i = 0; i < R; ++i)                                              \
            for (unsigned j = 0; j < C; ++j) old.data[i][j] = name(&p->data[i][j], v.data[i][j]); \
        return old;                                                                   \
    }
WEFT_MAT_ATOMIC(atomic_add_raw)
WEFT_MAT_ATOMIC(atomic_min_raw)
WEFT_MAT_ATOMIC(atomic_max_raw)
WEFT_MAT_ATOMIC(atomic_and_raw)
WEFT_MAT_ATOMIC(atomic_or_raw)
WEFT_MAT_ATOMIC(atomic_xor_raw)
#undef WEFT_MAT_ATOMIC

// Bitwise operators on integer matrices, component by component.
WEFT_MAT_CW2(bit_and, bit_and)
WEFT_MAT_CW2(bit_or, bit_or)
WEFT_MAT_CW2(bit_xor, bit_xor)
WEFT_MAT_CW2(lshift, lshift)
WEFT_MAT_CW2(rshift, rshift)
WEFT_MAT_CW1(invert)
#undef WEFT_MAT_CW2
#undef WEFT_MAT_CW1

template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> atomic_sub_raw(mat_t<R, C, T>* p, mat_t<R, C, T> v) {
    return atomic_add_raw(p, neg(v));
}

template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_atomic_extremum(const mat_t<R, C, T>& cur, const mat_t<R, C, T>& v, mat_t<R, C, T>& adj_v,
                                 const mat_t<R, C, T>& g) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j)
            if (cmp_eq(cur.data[i][j], v.data[i][j])) vec_detail::accum_from(adj_v.data[i][j], g.data[i][j]);
}

// lerp(a, b, t) = a (1 - t) + b t, component-wise, for vectors and matrices.
template <unsigned N, typename T>
WEFT_FN vec_t<N, T> lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = lerp(a.c[i], b.c[i], t);
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, T& adj_t,
                      const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_lerp(a.c[i], b.c[i], t, adj_a.c[i], adj_b.c[i], adj_t, adj_ret.c[i]);
}
template <unsigned R, unsigned C, typename T>
WEFT_FN mat_t<R, C, T> lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[i][j] = lerp(a.data[i][j], b.data[i][j], t);
    return r;
}
template <unsigned R, unsigned C, typename T>
WEFT_FN void adj_lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t, mat_t<R, C, T>& adj_a,
                      mat_t<R, C, T>& adj_b, T& adj_t, const mat_t<R, C, T>& adj_ret) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j)
            adj_lerp(a.data[i][j], b.data[i][j], t, adj_a.data[i][j], adj_b.data[i][j], adj_t, adj_ret.data[i][j]);
}

}  // namespace weft
