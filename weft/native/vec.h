// weft vector builtins: the forward and adjoint C++ of every builtin on vec_t<N, T>, plus the
// pieces shared by every composite type (vec_t, mat_t, quat_t, transform_t): where/select,
// component-wise atomics and `-=`.
//
// Calling convention (as in scalar.h): forward `R weft::f(inputs...)`, adjoint
// `void weft::adj_f(inputs..., adj_inputs&..., adj_ret)` that only ever accumulates.
// Constructors take the result type as their first, explicit template argument:
//   weft::vec_make<weft::vec_t<3, weft::float32>>(a, b, c)
//   weft::adj_vec_make<weft::vec_t<3, weft::float32>>(a, b, c, adj_a, adj_b, adj_c, adj_ret)
// Component access takes a source-location id `loc` after the value; its adjoint gets an adjoint
// reference for every input, `loc` and the indices included (they are never written).
//
// Types: T is any scalar (float16/32/64, int8..uint64) for construction, indexing, + - * /,
// comparisons, min/max/abs/sign/clamp, where and atomics; the rest (length, normalize, ...) is
// for float T. Arithmetic goes through the scalar builtins (ints wrap, x / 0 == 0, float16 is
// rounded per operation); sums of products (dot, matrix products) accumulate in float32 for
// float16 and in wrapping unsigned arithmetic for ints, then round once. Integer adjoints
// compile and do nothing.
//
// Semantics, checked against warp-lang 1.19 on the CPU:
//   - Indices wrap like Python: v[-1] is the last component; out of [-N, N) raises a component
//     error (Warp does not check).
//   - normalize(v) is zero when length(v) == 0 (no epsilon: a tiny non-zero vector normalises),
//     and its gradient there is zero; so is length's.
//   - max(v)/min(v)/argmax/argmin: the first extreme component wins a tie (argmax is uint32);
//     NaN components lose to numbers (fmin/fmax).
//   - norm_l2 = length; norm_huber(v, d) = |v|^2/2 if |v| <= d else d (|v| - d/2);
//     norm_pseudo_huber(v, d) = d sqrt(1 + |v|^2/d^2); smooth_normalize(v, d) = v / that.
//   - select(cond, a, b) = cond ? b : a (Warp's old order, as in scalar.h); where(c, a, b) = c ? a : b.
//   - print: components "%g"-formatted, each followed by a space ("1 2 3.5 ").
//   - atomic_min/max on a vector act per component and so does their gradient.
//   - assign_copy's adjoint is exact: the overwritten component gets no gradient. Warp 1.19 gets
//     `w[1] = w[1] * 2.0` wrong (it gives d(w0 + w1 + w2)/dw = (1, 3, 1), the truth is (1, 2, 1)).
// Extensions over Warp 1.19: clamp(v, lo, hi) component-wise (Warp has scalar clamp only);
// cmp_ne on vectors (Warp's `!=` on vectors fails to compile).
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::, no lambdas.
#pragma once

#include "scalar.h"
#include "vec_types.h"

namespace weft {

// ---------------------------------------------------------------------------------------------
// Traits and helpers.

template <typename V>
struct vec_traits;
template <unsigned N, typename T>
struct vec_traits<vec_t<N, T>> {
    static constexpr unsigned size = N;
    typedef T scalar;
};

namespace vec_detail {

// The type sums of products accumulate in: float32 for float16, wrapping unsigned for ints.
template <typename T, bool F = scalar_traits<T>::is_float>
struct acc_of {
    typedef compute_t<T> type;
};
template <typename T>
struct acc_of<T, false> {
    typedef typename scalar_traits<T>::wide type;
};
template <typename T>
using acc_t = typename acc_of<T>::type;

template <typename T>
WEFT_FN acc_t<T> acc(T x) {
    if constexpr (scalar_traits<T>::is_float)
        return acc_t<T>(x);
    else
        return scalar_detail::wide(x);
}

}  // namespace vec_detail

// Normalises a component index: negative indices count from the end (like Python and Warp);
// anything outside [-n, n) raises a component error (on CUDA: recorded, then the thread exits).
template <typename I>
WEFT_FN int component_index(int32 loc, I i, int32 n) {
    if constexpr (I(-1) < I(0)) {  // signed index
        int64 k = int64(i);
        if (k < 0) k += n;
        if (k >= 0 && k < n) return int(k);
        raise_component_error(loc, int64(i), n);
    } else {
        uint64 k = uint64(i);
        if (k < uint64(n)) return int(k);
        raise_component_error(loc, int64(k), n);
    }
    return 0;
}

// adj += g component-wise for float T (scalar.h's accum); integer vectors take no gradient.
template <unsigned N, typename T, typename R>
WEFT_FN void vec_accum_scaled(vec_t<N, T>& adj, const vec_t<N, T>& v, R s) {
    if constexpr (scalar_traits<T>::is_float)
        for (unsigned i = 0; i < N; ++i) accum(adj.c[i], compute_t<T>(R(v.c[i]) * s));
}
template <unsigned N, typename T>
WEFT_FN void vec_accum(vec_t<N, T>& adj, const vec_t<N, T>& g) {
    if constexpr (scalar_traits<T>::is_float)
        for (unsigned i = 0; i < N; ++i) accum(adj.c[i], compute_t<T>(g.c[i]));
}

// `-=` for every composite type (array.h's adjoint of atomic_sub needs it).
template <unsigned N, typename T>
WEFT_FN vec_t<N, T>& operator-=(vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i) a.c[i] = sub(a.c[i], b.c[i]);
    return a;
}
template <typename T>
WEFT_FN quat_t<T>& operator-=(quat_t<T>& a, const quat_t<T>& b) {
    for (int i = 0; i < 4; ++i) a[i] = sub(a[i], b[i]);
    return a;
}
template <typename T>
WEFT_FN transform_t<T>& operator-=(transform_t<T>& a, const transform_t<T>& b) {
    a.p -= b.p;
    a.q -= b.q;
    return a;
}

// ---------------------------------------------------------------------------------------------
// Construction: vec_zero<V>(), vec_fill<V>(s), vec_make<V>(c0, ..., cN-1), vec_convert<V>(v).

template <typename V>
WEFT_FN V vec_zero() {
    return V();
}
template <typename V>
WEFT_FN void adj_vec_zero(const V& adj_ret) {}

template <typename V, typename S>
WEFT_FN V vec_fill(S s) {
    typedef typename vec_traits<V>::scalar T;
    V r;
    for (unsigned i = 0; i < vec_traits<V>::size; ++i) r.c[i] = T(s);
    return r;
}
template <typename V, typename S>
WEFT_FN void adj_vec_fill(S s, S& adj_s, const V& adj_ret) {
    typedef typename vec_traits<V>::scalar T;
    if constexpr (scalar_traits<T>::is_float) {
        compute_t<T> sum = 0;
        for (unsigned i = 0; i < vec_traits<V>::size; ++i) sum += compute_t<T>(adj_ret.c[i]);
        accum(adj_s, compute_t<S>(sum));
    }
}

template <typename V, typename... S>
WEFT_FN V vec_make(S... s) {
    typedef typename vec_traits<V>::scalar T;
    static_assert(sizeof...(S) == vec_traits<V>::size, "vec_make: one argument per component");
    V r;
    unsigned i = 0;
    ((r.c[i++] = T(s)), ...);
    return r;
}

namespace vec_detail {

// adj += x for a float adjoint of a float component; ints take no gradient.
template <typename A, typename T>
WEFT_FN void accum_from(A& adj, T x) {
    if constexpr (scalar_traits<A>::is_float && scalar_traits<T>::is_float)
        accum(adj, compute_t<A>(compute_t<T>(x)));
}

// How a constructor's k-th argument maps onto its result's adjoint (one struct per constructor
// shape; mat.h adds rows and columns).
struct part_component {
    template <typename A, unsigned N, typename T>
    static WEFT_FN void add_part(A& adj, const vec_t<N, T>& adj_ret, unsigned k) {
        accum_from(adj, adj_ret.c[k]);
    }
};

// The adjoint arguments of a constructor are (x0..xN-1, adj_x0..adj_xN-1, adj_ret): walk them,
// giving argument K (N <= K < 2N) its part K - N of adj_ret.
template <unsigned K, unsigned N, typename Part, typename V, typename A, typename... Rest>
WEFT_FN void adj_make_walk(const V& adj_ret, A& a, Rest&... rest) {
    if constexpr (K >= N) Part::add_part(a, adj_ret, K - N);
    if constexpr (K + 1 < 2 * N) adj_make_walk<K + 1, N, Part>(adj_ret, rest...);
}
template <typename V, typename A>
WEFT_FN const V& last_arg(const A& a) {
    return a;
}
template <typename V, typename A, typename... Rest>
WEFT_FN const V& last_arg(const A&, const Rest&... rest) {
    return last_arg<V>(rest...);
}
template <unsigned N, typename Part, typename V, typename... A>
WEFT_FN void adj_make(A&... args) {
    static_assert(sizeof...(A) == 2 * N + 1, "constructor adjoint: inputs, their adjoints, adj_ret");
    adj_make_walk<0, N, Part>(last_arg<V>(args...), args...);
}

}  // namespace vec_detail

// adj_vec_make<V>(c0..cN-1, adj_c0&..adj_cN-1&, adj_ret)
template <typename V, typename... A>
WEFT_FN void adj_vec_make(A&&... args) {
    vec_detail::adj_make<vec_traits<V>::size, vec_detail::part_component, V>(args...);
}

// Component-wise cast (scalar.h's cast: float -> int truncates); float -> float passes gradient.
template <typename V, unsigned N, typename S>
WEFT_FN V vec_convert(const vec_t<N, S>& v) {
    typedef typename vec_traits<V>::scalar T;
    static_assert(vec_traits<V>::size == N, "vec_convert: same length");
    V r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = cast<T>(v.c[i]);
    return r;
}
template <typename V, unsigned N, typename S>
WEFT_FN void adj_vec_convert(const vec_t<N, S>& v, vec_t<N, S>& adj_v, const V& adj_ret) {
    typedef typename vec_traits<V>::scalar T;
    for (unsigned i = 0; i < N; ++i) adj_cast<T>(v.c[i], adj_v.c[i], adj_ret.c[i]);
}

// ---------------------------------------------------------------------------------------------
// Component access: extract(v, loc, i), assign_copy(v, loc, i, value) (a modified copy).

template <unsigned N, typename T, typename I>
WEFT_FN T extract(const vec_t<N, T>& v, int32 loc, I i) {
    return v.c[component_index(loc, i, N)];
}
template <unsigned N, typename T, typename I>
WEFT_FN void adj_extract(const vec_t<N, T>& v, int32 loc, I i, vec_t<N, T>& adj_v, int32& adj_loc, I& adj_i,
                         T adj_ret) {
    accum(adj_v.c[component_index(loc, i, N)], compute_t<T>(adj_ret));
}

template <unsigned N, typename T, typename I, typename S>
WEFT_FN vec_t<N, T> assign_copy(const vec_t<N, T>& v, int32 loc, I i, S value) {
    vec_t<N, T> r = v;
    r.c[component_index(loc, i, N)] = T(value);
    return r;
}
template <unsigned N, typename T, typename I, typename S>
WEFT_FN void adj_assign_copy(const vec_t<N, T>& v, int32 loc, I i, S value, vec_t<N, T>& adj_v, int32& adj_loc,
                             I& adj_i, S& adj_value, const vec_t<N, T>& adj_ret) {
    int k = component_index(loc, i, N);
    if constexpr (scalar_traits<T>::is_float) {
        for (unsigned j = 0; j < N; ++j)
            if (int(j) != k) accum(adj_v.c[j], compute_t<T>(adj_ret.c[j]));
        accum(adj_value, compute_t<S>(compute_t<T>(adj_ret.c[k])));
    }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic: add sub neg pos, mul/div by a scalar, scalar / vector, cw_mul, cw_div.
// These overload scalar.h's templates and win overload resolution by partial ordering.

template <unsigned N, typename T>
WEFT_FN vec_t<N, T> add(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = add(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_add(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     const vec_t<N, T>& adj_ret) {
    vec_accum(adj_a, adj_ret);
    vec_accum(adj_b, adj_ret);
}

template <unsigned N, typename T>
WEFT_FN vec_t<N, T> sub(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = sub(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_sub(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     const vec_t<N, T>& adj_ret) {
    vec_accum(adj_a, adj_ret);
    vec_accum_scaled(adj_b, adj_ret, compute_t<T>(-1));
}

// A component-wise unary function through the scalar one (forward only).
#define WEFT_VEC_CW1(name)                                                                               \
    template <unsigned N, typename T>                                                                    \
    WEFT_FN vec_t<N, T> name(const vec_t<N, T>& a) {                                                     \
        vec_t<N, T> r;                                                                                   \
        for (unsigned i = 0; i < N; ++i) r.c[i] = name(a.c[i]);                                          \
        return r;                                                                                        \
    }
WEFT_VEC_CW1(neg)
template <unsigned N, typename T>
WEFT_FN void adj_neg(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    vec_accum_scaled(adj_a, adj_ret, compute_t<T>(-1));
}

template <unsigned N, typename T>
WEFT_FN vec_t<N, T> pos(const vec_t<N, T>& a) {
    return a;
}
template <unsigned N, typename T>
WEFT_FN void adj_pos(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    vec_accum(adj_a, adj_ret);
}

template <unsigned N, typename T>
WEFT_FN vec_t<N, T> mul(const vec_t<N, T>& a, T s) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = mul(a.c[i], s);
    return r;
}
template <unsigned N, typename T>
WEFT_FN vec_t<N, T> mul(T s, const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = mul(s, a.c[i]);
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_mul(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> R;
        R d = 0;
        for (unsigned i = 0; i < N; ++i) d += R(a.c[i]) * R(adj_ret.c[i]);
        vec_accum_scaled(adj_a, adj_ret, R(s));
        accum(adj_s, d);
    }
}
template <unsigned N, typename T>
WEFT_FN void adj_mul(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}

template <unsigned N, typename T>
WEFT_FN vec_t<N, T> div(const vec_t<N, T>& a, T s) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = div(a.c[i], s);
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_div(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> R;
        R d = 0;  // dot(adj_ret, a / s)
        for (unsigned i = 0; i < N; ++i) d += R(adj_ret.c[i]) * (R(a.c[i]) / R(s));
        vec_accum_scaled(adj_a, adj_ret, R(1) / R(s));
        accum(adj_s, -d / R(s));
    }
}

// s / v component-wise.
template <unsigned N, typename T>
WEFT_FN vec_t<N, T> div(T s, const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = div(s, a.c[i]);
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_div(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_div(s, a.c[i], adj_s, adj_a.c[i], adj_ret.c[i]);
}

template <unsigned N, typename T>
WEFT_FN vec_t<N, T> cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = mul(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                        const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_mul(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}

template <unsigned N, typename T>
WEFT_FN vec_t<N, T> cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = div(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                        const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_div(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}

// ---------------------------------------------------------------------------------------------
// Comparisons of whole vectors (not differentiable).

template <unsigned N, typename T>
WEFT_FN bool cmp_eq(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i)
        if (!cmp_eq(a.c[i], b.c[i])) return false;
    return true;
}
template <unsigned N, typename T>
WEFT_FN bool cmp_ne(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    return !cmp_eq(a, b);
}

// ---------------------------------------------------------------------------------------------
// Component-wise min, max, mod, abs, sign, clamp (scalar.h's rules per component); reductions
// max(v), min(v), argmax(v), argmin(v).

// A component-wise binary function (forward only); WEFT_VEC_BINARY_CW adds its adjoint.
#define WEFT_VEC_CW2(name)                                                                                 \
    template <unsigned N, typename T>                                                                      \
    WEFT_FN vec_t<N, T> name(const vec_t<N, T>& a, const vec_t<N, T>& b) {                                 \
        vec_t<N, T> r;                                                                                     \
        for (unsigned i = 0; i < N; ++i) r.c[i] = name(a.c[i], b.c[i]);                                    \
        return r;                                                                                          \
    }
#define WEFT_VEC_BINARY_CW(name)                                                                           \
    WEFT_VEC_CW2(name)                                                                                     \
    template <unsigned N, typename T>                                                                      \
    WEFT_FN void adj_##name(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, \
                            const vec_t<N, T>& adj_ret) {                                                  \
        for (unsigned i = 0; i < N; ++i) adj_##name(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]); \
    }
WEFT_VEC_BINARY_CW(min)
WEFT_VEC_BINARY_CW(max)
WEFT_VEC_BINARY_CW(mod)  // a % b component-wise: fmod for floats, C remainder for ints (Warp)
#undef WEFT_VEC_BINARY_CW

#define WEFT_VEC_UNARY_CW(name)                                                                          \
    WEFT_VEC_CW1(name)                                                                                   \
    template <unsigned N, typename T>                                                                    \
    WEFT_FN void adj_##name(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {      \
        for (unsigned i = 0; i < N; ++i) adj_##name(a.c[i], adj_a.c[i], adj_ret.c[i]);                   \
    }
WEFT_VEC_UNARY_CW(abs)
WEFT_VEC_UNARY_CW(sign)
#undef WEFT_VEC_UNARY_CW

template <unsigned N, typename T>
WEFT_FN vec_t<N, T> clamp(const vec_t<N, T>& x, const vec_t<N, T>& lo, const vec_t<N, T>& hi) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = clamp(x.c[i], lo.c[i], hi.c[i]);
    return r;
}
template <unsigned N, typename T>
WEFT_FN void adj_clamp(const vec_t<N, T>& x, const vec_t<N, T>& lo, const vec_t<N, T>& hi, vec_t<N, T>& adj_x,
                       vec_t<N, T>& adj_lo, vec_t<N, T>& adj_hi, const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i)
        adj_clamp(x.c[i], lo.c[i], hi.c[i], adj_x.c[i], adj_lo.c[i], adj_hi.c[i], adj_ret.c[i]);
}

// Index of the first largest / smallest component; NaN components lose to any number, as in
// fmin/fmax (so max(v) / min(v) skip NaN and their gradient goes where the value came from).
template <unsigned N, typename T>
WEFT_FN uint32 argmax(const vec_t<N, T>& a) {
    uint32 best = 0;
    for (unsigned i = 1; i < N; ++i) {
        compute_t<T> x = compute_t<T>(a.c[i]), b = compute_t<T>(a.c[best]);
        if (x > b || (fmath::is_nan_any(b) && !fmath::is_nan_any(x))) best = i;
    }
    return best;
}
template <unsigned N, typename T>
WEFT_FN uint32 argmin(const vec_t<N, T>& a) {
    uint32 best = 0;
    for (unsigned i = 1; i < N; ++i) {
        compute_t<T> x = compute_t<T>(a.c[i]), b = compute_t<T>(a.c[best]);
        if (x < b || (fmath::is_nan_any(b) && !fmath::is_nan_any(x))) best = i;
    }
    return best;
}

template <unsigned N, typename T>
WEFT_FN T max(const vec_t<N, T>& a) {
    return a.c[argmax(a)];
}
template <unsigned N, typename T>
WEFT_FN T min(const vec_t<N, T>& a) {
    return a.c[argmin(a)];
}
template <unsigned N, typename T>
WEFT_FN void adj_max(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    accum(adj_a.c[argmax(a)], compute_t<T>(adj_ret));
}
template <unsigned N, typename T>
WEFT_FN void adj_min(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    accum(adj_a.c[argmin(a)], compute_t<T>(adj_ret));
}

// ---------------------------------------------------------------------------------------------
// Vector math: dot, cross, length, length_sq, normalize, norm_l1, norm_l2, norm_huber,
// norm_pseudo_huber, smooth_normalize.

template <unsigned N, typename T>
WEFT_FN T dot(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_detail::acc_t<T> s = 0;
    for (unsigned i = 0; i < N; ++i) s += vec_detail::acc(a.c[i]) * vec_detail::acc(b.c[i]);
    return T(s);
}
template <unsigned N, typename T>
WEFT_FN void adj_dot(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        vec_accum_scaled(adj_a, b, compute_t<T>(adj_ret));
        vec_accum_scaled(adj_b, a, compute_t<T>(adj_ret));
    }
}

template <typename T>
WEFT_FN vec_t<3, T> cross(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    using vec_detail::acc;
    vec_t<3, T> r;
    r.c[0] = T(acc(a.c[1]) * acc(b.c[2]) - acc(a.c[2]) * acc(b.c[1]));
    r.c[1] = T(acc(a.c[2]) * acc(b.c[0]) - acc(a.c[0]) * acc(b.c[2]));
    r.c[2] = T(acc(a.c[0]) * acc(b.c[1]) - acc(a.c[1]) * acc(b.c[0]));
    return r;
}
// d(a x b) = da x b + a x db, so adj_a += b x adj_ret and adj_b += adj_ret x a.
template <typename T>
WEFT_FN void adj_cross(const vec_t<3, T>& a, const vec_t<3, T>& b, vec_t<3, T>& adj_a, vec_t<3, T>& adj_b,
                       const vec_t<3, T>& adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> R;
        R a0 = R(a.c[0]), a1 = R(a.c[1]), a2 = R(a.c[2]);
        R b0 = R(b.c[0]), b1 = R(b.c[1]), b2 = R(b.c[2]);
        R g0 = R(adj_ret.c[0]), g1 = R(adj_ret.c[1]), g2 = R(adj_ret.c[2]);
        accum(adj_a.c[0], b1 * g2 - b2 * g1);
        accum(adj_a.c[1], b2 * g0 - b0 * g2);
        accum(adj_a.c[2], b0 * g1 - b1 * g0);
        accum(adj_b.c[0], g1 * a2 - g2 * a1);
        accum(adj_b.c[1], g2 * a0 - g0 * a2);
        accum(adj_b.c[2], g0 * a1 - g1 * a0);
    }
}

namespace vec_detail {
template <unsigned N, typename T>
WEFT_FN compute_t<T> length_sq_r(const vec_t<N, T>& a) {
    compute_t<T> s = 0;
    for (unsigned i = 0; i < N; ++i) s += compute_t<T>(a.c[i]) * compute_t<T>(a.c[i]);
    return s;
}
template <unsigned N, typename T>
WEFT_FN compute_t<T> length_r(const vec_t<N, T>& a) {
    return fmath::sqrt(length_sq_r(a));
}
}  // namespace vec_detail

template <unsigned N, typename T>
WEFT_FN T length_sq(const vec_t<N, T>& a) {
    return T(vec_detail::length_sq_r(a));
}
template <unsigned N, typename T>
WEFT_FN void adj_length_sq(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    vec_accum_scaled(adj_a, a, compute_t<T>(2) * compute_t<T>(adj_ret));
}

template <unsigned N, typename T>
WEFT_FN T length(const vec_t<N, T>& a) {
    return T(vec_detail::length_r(a));
}
// Zero gradient at the zero vector (like Warp).
template <unsigned N, typename T>
WEFT_FN void adj_length(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    compute_t<T> l = vec_detail::length_r(a);
    if (l > compute_t<T>(0)) vec_accum_scaled(adj_a, a, compute_t<T>(adj_ret) / l);
}

template <unsigned N, typename T>
WEFT_FN T norm_l2(const vec_t<N, T>& a) {
    return length(a);
}
template <unsigned N, typename T>
WEFT_FN void adj_norm_l2(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    adj_length(a, adj_a, adj_ret);
}

template <unsigned N, typename T>
WEFT_FN T norm_l1(const vec_t<N, T>& a) {
    compute_t<T> s = 0;
    for (unsigned i = 0; i < N; ++i) s += fmath::fabs(compute_t<T>(a.c[i]));
    return T(s);
}
template <unsigned N, typename T>
WEFT_FN void adj_norm_l1(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_abs(a.c[i], adj_a.c[i], adj_ret);
}

// The zero vector normalises to zero (no epsilon, like Warp).
template <unsigned N, typename T>
WEFT_FN vec_t<N, T> normalize(const vec_t<N, T>& a) {
    typedef compute_t<T> R;
    R l = vec_detail::length_r(a);
    vec_t<N, T> r;
    if (l > R(0))
        for (unsigned i = 0; i < N; ++i) r.c[i] = T(R(a.c[i]) / l);
    return r;
}
// d(a / l) = (I - n n^T) da / l with n = a / l; zero at the zero vector.
template <unsigned N, typename T>
WEFT_FN void adj_normalize(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    typedef compute_t<T> R;
    R l = vec_detail::length_r(a);
    if (!(l > R(0))) return;
    R inv = R(1) / l, d = 0;
    for (unsigned i = 0; i < N; ++i) d += R(a.c[i]) * inv * R(adj_ret.c[i]);
    for (unsigned i = 0; i < N; ++i) accum(adj_a.c[i], (R(adj_ret.c[i]) - R(a.c[i]) * inv * d) * inv);
}

// Huber: |v|^2 / 2 inside |v| <= delta, delta (|v| - delta / 2) outside.
template <unsigned N, typename T>
WEFT_FN T norm_huber(const vec_t<N, T>& a, T delta) {
    typedef compute_t<T> R;
    R l = vec_detail::length_r(a), d = R(delta);
    return l <= d ? T(R(0.5) * l * l) : T(d * (l - R(0.5) * d));
}
template <unsigned N, typename T>
WEFT_FN void adj_norm_huber(const vec_t<N, T>& a, T delta, vec_t<N, T>& adj_a, T& adj_delta, T adj_ret) {
    typedef compute_t<T> R;
    R l = vec_detail::length_r(a), d = R(delta), g = R(adj_ret);
    if (l <= d) {
        vec_accum_scaled(adj_a, a, g);
    } else {
        vec_accum_scaled(adj_a, a, g * d / l);
        accum(adj_delta, g * (l - d));
    }
}

// H(v) = delta sqrt(1 + |v|^2 / delta^2).
template <unsigned N, typename T>
WEFT_FN T norm_pseudo_huber(const vec_t<N, T>& a, T delta) {
    typedef compute_t<T> R;
    R d = R(delta);
    return T(d * fmath::sqrt(R(1) + vec_detail::length_sq_r(a) / (d * d)));
}
// dH/dv = v / H; dH/ddelta = 1 / sqrt(1 + |v|^2 / delta^2).
template <unsigned N, typename T>
WEFT_FN void adj_norm_pseudo_huber(const vec_t<N, T>& a, T delta, vec_t<N, T>& adj_a, T& adj_delta, T adj_ret) {
    typedef compute_t<T> R;
    R d = R(delta), g = R(adj_ret);
    R s = fmath::sqrt(R(1) + vec_detail::length_sq_r(a) / (d * d));
    vec_accum_scaled(adj_a, a, g / (d * s));
    accum(adj_delta, g / s);
}

template <unsigned N, typename T>
WEFT_FN vec_t<N, T> smooth_normalize(const vec_t<N, T>& a, T delta) {
    typedef compute_t<T> R;
    R h = R(norm_pseudo_huber(a, delta));
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = T(R(a.c[i]) / h);
    return r;
}
// r = v / H: adj_v += adj_r / H - v (adj_r . v) / H^3; adj_delta += -(adj_r . v) / (H^2 s).
template <unsigned N, typename T>
WEFT_FN void adj_smooth_normalize(const vec_t<N, T>& a, T delta, vec_t<N, T>& adj_a, T& adj_delta,
                                  const vec_t<N, T>& adj_ret) {
    typedef compute_t<T> R;
    R d = R(delta);
    R s = fmath::sqrt(R(1) + vec_detail::length_sq_r(a) / (d * d));
    R h = d * s, gv = 0;
    for (unsigned i = 0; i < N; ++i) gv += R(adj_ret.c[i]) * R(a.c[i]);
    for (unsigned i = 0; i < N; ++i) accum(adj_a.c[i], R(adj_ret.c[i]) / h - R(a.c[i]) * gv / (h * h * h));
    accum(adj_delta, -gv / (h * h * s));
}

// ---------------------------------------------------------------------------------------------
// where / select for every composite type (scalar.h's adjoints only handle scalars).
// The condition's adjoint is never written.

#define WEFT_COMPOSITE_WHERE(TPL, TYPE)                                                                     \
    template <typename Cond, TPL>                                                                              \
    WEFT_FN TYPE where(Cond cond, const TYPE& a, const TYPE& b) {                                              \
        return truth(cond) ? a : b;                                                                         \
    }                                                                                                       \
    template <typename Cond, TPL>                                                                              \
    WEFT_FN TYPE select(Cond cond, const TYPE& a, const TYPE& b) {                                             \
        return truth(cond) ? b : a;                                                                         \
    }                                                                                                       \
    template <typename Cond, TPL>                                                                              \
    WEFT_FN void adj_where(Cond cond, const TYPE& a, const TYPE& b, Cond& adj_cond, TYPE& adj_a, TYPE& adj_b,     \
                           const TYPE& adj_ret) {                                                           \
        if (truth(cond))                                                                                    \
            adj_a += adj_ret;                                                                               \
        else                                                                                                \
            adj_b += adj_ret;                                                                               \
    }                                                                                                       \
    template <typename Cond, TPL>                                                                              \
    WEFT_FN void adj_select(Cond cond, const TYPE& a, const TYPE& b, Cond& adj_cond, TYPE& adj_a, TYPE& adj_b,    \
                            const TYPE& adj_ret) {                                                          \
        if (truth(cond))                                                                                    \
            adj_b += adj_ret;                                                                               \
        else                                                                                                \
            adj_a += adj_ret;                                                                               \
    }

#define WEFT_COMMA ,
WEFT_COMPOSITE_WHERE(unsigned N WEFT_COMMA typename T, vec_t<N WEFT_COMMA T>)
WEFT_COMPOSITE_WHERE(unsigned R WEFT_COMMA unsigned C WEFT_COMMA typename T, mat_t<R WEFT_COMMA C WEFT_COMMA T>)
WEFT_COMPOSITE_WHERE(typename T, quat_t<T>)
WEFT_COMPOSITE_WHERE(typename T, transform_t<T>)
#undef WEFT_COMMA
#undef WEFT_COMPOSITE_WHERE

// ---------------------------------------------------------------------------------------------
// Printing, like Warp's kernel print(): each component "%g" (ints in full) and a space.

template <unsigned N, typename T>
WEFT_FN void print_value(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i) {
        print_value(a.c[i]);
        printf(" ");
    }
}

template <unsigned N, typename T>
WEFT_FN void expect_near(const vec_t<N, T>& a, const vec_t<N, T>& b, T tolerance) {
    for (unsigned i = 0; i < N; ++i)
        if (!near_(a.c[i], b.c[i], tolerance)) {
            expect_report("expect_near", a, b);
            return;
        }
}
template <unsigned N, typename T>
WEFT_FN void expect_near(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    expect_near(a, b, T(1e-6));
}

// ---------------------------------------------------------------------------------------------
// Atomics on composite elements: each component atomically, through the scalar atomics.
// Return the previous value (assembled from the components' previous values).

#define WEFT_VEC_ATOMIC(name)                                                        \
    template <unsigned N, typename T>                                                \
    WEFT_FN vec_t<N, T> name(vec_t<N, T>* p, vec_t<N, T> v) {                        \
        vec_t<N, T> old;                                                             \
        for (unsigned i = 0; i < N; ++i) old.c[i] = name(&p->c[i], v.c[i]);          \
        return old;                                                                  \
    }
WEFT_VEC_ATOMIC(atomic_add_raw)
WEFT_VEC_ATOMIC(atomic_min_raw)
WEFT_VEC_ATOMIC(atomic_max_raw)
WEFT_VEC_ATOMIC(atomic_and_raw)
WEFT_VEC_ATOMIC(atomic_or_raw)
WEFT_VEC_ATOMIC(atomic_xor_raw)
#undef WEFT_VEC_ATOMIC
template <unsigned N, typename T>
WEFT_FN vec_t<N, T> atomic_sub_raw(vec_t<N, T>* p, vec_t<N, T> v) {
    return atomic_add_raw(p, neg(v));
}

// Bitwise operators on integer vectors, component by component (a vector of shift counts too).
WEFT_VEC_CW2(bit_and)
WEFT_VEC_CW2(bit_or)
WEFT_VEC_CW2(bit_xor)
WEFT_VEC_CW2(lshift)
WEFT_VEC_CW2(rshift)
WEFT_VEC_CW1(invert)
#undef WEFT_VEC_CW2
#undef WEFT_VEC_CW1

// The gradient of atomic_min/max goes to each component the element ended up holding
// (array.h's adj_atomic_min/max call this; the scalar version lives there).
template <unsigned N, typename T>
WEFT_FN void adj_atomic_extremum(const vec_t<N, T>& cur, const vec_t<N, T>& v, vec_t<N, T>& adj_v,
                                 const vec_t<N, T>& g) {
    for (unsigned i = 0; i < N; ++i)
        if (cmp_eq(cur.c[i], v.c[i]) || (fmath::is_nan_any(cur.c[i]) && fmath::is_nan_any(v.c[i])))
            accum(adj_v.c[i], compute_t<T>(g.c[i]));
}

template <typename T>
WEFT_FN quat_t<T> atomic_add_raw(quat_t<T>* p, quat_t<T> v) {
    quat_t<T> old;
    for (int i = 0; i < 4; ++i) old[i] = atomic_add_raw(&(*p)[i], v[i]);
    return old;
}
template <typename T>
WEFT_FN quat_t<T> atomic_sub_raw(quat_t<T>* p, quat_t<T> v) {
    quat_t<T> old;
    for (int i = 0; i < 4; ++i) old[i] = atomic_add_raw(&(*p)[i], neg(v[i]));
    return old;
}
template <typename T>
WEFT_FN transform_t<T> atomic_add_raw(transform_t<T>* p, transform_t<T> v) {
    transform_t<T> old;
    old.p = atomic_add_raw(&p->p, v.p);
    old.q = atomic_add_raw(&p->q, v.q);
    return old;
}
template <typename T>
WEFT_FN transform_t<T> atomic_sub_raw(transform_t<T>* p, transform_t<T> v) {
    transform_t<T> old;
    old.p = atomic_sub_raw(&p->p, v.p);
    old.q = atomic_sub_raw(&p->q, v.q);
    return old;
}

}  // namespace weft
