// weft transform builtins: forward and adjoint C++ of every builtin on transform_t<T> = {p, q}
// (a rigid transform x -> q x q^-1 + p; T = float16/32/64, float16 computed in float32).
//
// Calling convention as in quat.h. Constructors take the result type first:
//   weft::transform_make<X>(p, q), weft::transform_make<X>(px, py, pz, qx, qy, qz, qw),
//   weft::transform_zero<X>(), weft::transform_identity<X>(), weft::transform_convert<X>(other).
// transform_get_translation / transform_get_rotation accept an optional (ignored) explicit
// template argument, so both `weft::transform_get_translation(t)` (builtin call) and
// `weft::transform_get_translation<V>(t)` (the frontend's `t.p`, rendered as a constructor) work.
//
// Semantics, checked against warp-lang 1.19 on the CPU (float64 probes):
//   - transform_point(t, x) = quat_rotate(t.q, x) + t.p; transform_vector(t, v) = quat_rotate(t.q, v)
//     (no normalisation of q).
//   - transform_point(m, x) = (m @ (x, 1))[0:3], transform_vector(m, v) = (m @ (v, 0))[0:3] for a
//     row-major mat44; the last row of m is ignored.
//   - transform_multiply(a, b) == mul(a, b) = (a.p + quat_rotate(a.q, b.p), a.q * b.q).
//   - transform_inverse(t) = (-quat_rotate(conj(q), p), conj(q)) (conjugate, as quat_inverse).
//   - add, sub, mul by a scalar (both orders) and lerp act on all 7 components (q too).
//     Warp has no neg/div for transforms; neither does weft.
//   - transform_set_translation / transform_set_rotation modify their argument in Warp; here they
//     return the modified copy (the frontend rebinds the name).
//   - print: "(px py pz) (qx qy qz qw)".
//   - Components: extract/assign_copy index 0..6 = p.x, p.y, p.z, q.x, q.y, q.z, q.w (negative
//     indices wrap; out of [-7, 7) raises a component error).
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::, no lambdas.
#pragma once

#include "quat.h"

namespace weft {

template <typename X>
struct transform_traits;
template <typename T>
struct transform_traits<transform_t<T>> {
    typedef T scalar;
};

// ---------------------------------------------------------------------------------------------
// Construction.

template <typename X>
WEFT_FN X transform_zero() {
    return X();
}
template <typename X>
WEFT_FN void adj_transform_zero(const X& adj_ret) {}

template <typename X>
WEFT_FN X transform_identity() {
    X r;
    r.q.w = typename transform_traits<X>::scalar(1);
    return r;
}
template <typename X>
WEFT_FN void adj_transform_identity(const X& adj_ret) {}

template <typename X, typename T>
WEFT_FN X transform_make(const vec_t<3, T>& p, const quat_t<T>& q) {
    X r;
    r.p = p;
    r.q = q;
    return r;
}
template <typename X, typename T>
WEFT_FN void adj_transform_make(const vec_t<3, T>& p, const quat_t<T>& q, vec_t<3, T>& adj_p, quat_t<T>& adj_q,
                                const X& adj_ret) {
    adj_p += adj_ret.p;
    adj_q += adj_ret.q;
}

template <typename X, typename S>
WEFT_FN X transform_make(S px, S py, S pz, S qx, S qy, S qz, S qw) {
    typedef typename transform_traits<X>::scalar T;
    X r;
    r.p.c[0] = T(px);
    r.p.c[1] = T(py);
    r.p.c[2] = T(pz);
    r.q = quat_t<T>(T(qx), T(qy), T(qz), T(qw));
    return r;
}
template <typename X, typename S>
WEFT_FN void adj_transform_make(S px, S py, S pz, S qx, S qy, S qz, S qw, S& adj_px, S& adj_py, S& adj_pz,
                                S& adj_qx, S& adj_qy, S& adj_qz, S& adj_qw, const X& adj_ret) {
    accum(adj_px, compute_t<S>(adj_ret[0]));
    accum(adj_py, compute_t<S>(adj_ret[1]));
    accum(adj_pz, compute_t<S>(adj_ret[2]));
    accum(adj_qx, compute_t<S>(adj_ret[3]));
    accum(adj_qy, compute_t<S>(adj_ret[4]));
    accum(adj_qz, compute_t<S>(adj_ret[5]));
    accum(adj_qw, compute_t<S>(adj_ret[6]));
}

template <typename X, typename S>
WEFT_FN X transform_convert(const transform_t<S>& t) {
    typedef typename transform_traits<X>::scalar T;
    X r;
    for (int i = 0; i < 3; ++i) r.p.c[i] = cast<T>(t.p.c[i]);
    for (int i = 0; i < 4; ++i) r.q[i] = cast<T>(t.q[i]);
    return r;
}
template <typename X, typename S>
WEFT_FN void adj_transform_convert(const transform_t<S>& t, transform_t<S>& adj_t, const X& adj_ret) {
    typedef typename transform_traits<X>::scalar T;
    for (int i = 0; i < 3; ++i) adj_cast<T>(t.p.c[i], adj_t.p.c[i], adj_ret.p.c[i]);
    for (int i = 0; i < 4; ++i) adj_cast<T>(t.q[i], adj_t.q[i], adj_ret.q[i]);
}

// ---------------------------------------------------------------------------------------------
// Parts: transform_get_translation, transform_get_rotation, transform_set_translation,
// transform_set_rotation (the last two return the modified copy).

template <typename Ignored = void, typename T>
WEFT_FN vec_t<3, T> transform_get_translation(const transform_t<T>& t) {
    return t.p;
}
template <typename Ignored = void, typename T>
WEFT_FN void adj_transform_get_translation(const transform_t<T>& t, transform_t<T>& adj_t,
                                           const vec_t<3, T>& adj_ret) {
    adj_t.p += adj_ret;
}
template <typename Ignored = void, typename T>
WEFT_FN quat_t<T> transform_get_rotation(const transform_t<T>& t) {
    return t.q;
}
template <typename Ignored = void, typename T>
WEFT_FN void adj_transform_get_rotation(const transform_t<T>& t, transform_t<T>& adj_t, const quat_t<T>& adj_ret) {
    adj_t.q += adj_ret;
}

template <typename T>
WEFT_FN transform_t<T> transform_set_translation(const transform_t<T>& t, const vec_t<3, T>& p) {
    transform_t<T> r = t;
    r.p = p;
    return r;
}
template <typename T>
WEFT_FN void adj_transform_set_translation(const transform_t<T>& t, const vec_t<3, T>& p, transform_t<T>& adj_t,
                                           vec_t<3, T>& adj_p, const transform_t<T>& adj_ret) {
    adj_t.q += adj_ret.q;
    adj_p += adj_ret.p;
}
template <typename T>
WEFT_FN transform_t<T> transform_set_rotation(const transform_t<T>& t, const quat_t<T>& q) {
    transform_t<T> r = t;
    r.q = q;
    return r;
}
template <typename T>
WEFT_FN void adj_transform_set_rotation(const transform_t<T>& t, const quat_t<T>& q, transform_t<T>& adj_t,
                                        quat_t<T>& adj_q, const transform_t<T>& adj_ret) {
    adj_t.p += adj_ret.p;
    adj_q += adj_ret.q;
}

// ---------------------------------------------------------------------------------------------
// Component access (7 components: p then q).

template <typename T, typename I>
WEFT_FN T extract(const transform_t<T>& t, int32 loc, I i) {
    return t[component_index(loc, i, 7)];
}
template <typename T, typename I>
WEFT_FN void adj_extract(const transform_t<T>& t, int32 loc, I i, transform_t<T>& adj_t, int32& adj_loc, I& adj_i,
                         T adj_ret) {
    accum(adj_t[component_index(loc, i, 7)], compute_t<T>(adj_ret));
}

template <typename T, typename I, typename S>
WEFT_FN transform_t<T> assign_copy(const transform_t<T>& t, int32 loc, I i, S value) {
    transform_t<T> r = t;
    r[component_index(loc, i, 7)] = T(value);
    return r;
}
template <typename T, typename I, typename S>
WEFT_FN void adj_assign_copy(const transform_t<T>& t, int32 loc, I i, S value, transform_t<T>& adj_t,
                             int32& adj_loc, I& adj_i, S& adj_value, const transform_t<T>& adj_ret) {
    int k = component_index(loc, i, 7);
    for (int j = 0; j < 3; ++j)
        if (j != k) accum(adj_t.p.c[j], compute_t<T>(adj_ret.p.c[j]));
    for (int j = 0; j < 4; ++j)
        if (j + 3 != k) accum(adj_t.q[j], compute_t<T>(adj_ret.q[j]));
    accum(adj_value, compute_t<S>(compute_t<T>(adj_ret[k])));
}

// ---------------------------------------------------------------------------------------------
// Component-wise arithmetic (all 7 components): add, sub, mul by a scalar, lerp.

template <typename T>
WEFT_FN transform_t<T> add(const transform_t<T>& a, const transform_t<T>& b) {
    transform_t<T> r;
    r.p = add(a.p, b.p);
    r.q = add(a.q, b.q);
    return r;
}
template <typename T>
WEFT_FN void adj_add(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a, transform_t<T>& adj_b,
                     const transform_t<T>& adj_ret) {
    adj_a += adj_ret;
    adj_b += adj_ret;
}
template <typename T>
WEFT_FN transform_t<T> sub(const transform_t<T>& a, const transform_t<T>& b) {
    transform_t<T> r;
    r.p = sub(a.p, b.p);
    r.q = sub(a.q, b.q);
    return r;
}
template <typename T>
WEFT_FN void adj_sub(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a, transform_t<T>& adj_b,
                     const transform_t<T>& adj_ret) {
    adj_sub(a.p, b.p, adj_a.p, adj_b.p, adj_ret.p);
    adj_sub(a.q, b.q, adj_a.q, adj_b.q, adj_ret.q);
}

template <typename T>
WEFT_FN transform_t<T> mul(const transform_t<T>& a, T s) {
    transform_t<T> r;
    r.p = mul(a.p, s);
    r.q = mul(a.q, s);
    return r;
}
template <typename T>
WEFT_FN void adj_mul(const transform_t<T>& a, T s, transform_t<T>& adj_a, T& adj_s, const transform_t<T>& adj_ret) {
    adj_mul(a.p, s, adj_a.p, adj_s, adj_ret.p);
    adj_mul(a.q, s, adj_a.q, adj_s, adj_ret.q);
}
template <typename T>
WEFT_FN transform_t<T> mul(T s, const transform_t<T>& a) {
    transform_t<T> r;
    r.p = mul(s, a.p);
    r.q = mul(s, a.q);
    return r;
}
template <typename T>
WEFT_FN void adj_mul(T s, const transform_t<T>& a, T& adj_s, transform_t<T>& adj_a, const transform_t<T>& adj_ret) {
    adj_mul(s, a.p, adj_s, adj_a.p, adj_ret.p);
    adj_mul(s, a.q, adj_s, adj_a.q, adj_ret.q);
}

template <typename T>
WEFT_FN transform_t<T> lerp(const transform_t<T>& a, const transform_t<T>& b, T t) {
    transform_t<T> r;
    for (int i = 0; i < 3; ++i) r.p.c[i] = lerp(a.p.c[i], b.p.c[i], t);
    r.q = lerp(a.q, b.q, t);
    return r;
}
template <typename T>
WEFT_FN void adj_lerp(const transform_t<T>& a, const transform_t<T>& b, T t, transform_t<T>& adj_a,
                      transform_t<T>& adj_b, T& adj_t, const transform_t<T>& adj_ret) {
    for (int i = 0; i < 3; ++i) adj_lerp(a.p.c[i], b.p.c[i], t, adj_a.p.c[i], adj_b.p.c[i], adj_t, adj_ret.p.c[i]);
    adj_lerp(a.q, b.q, t, adj_a.q, adj_b.q, adj_t, adj_ret.q);
}

// ---------------------------------------------------------------------------------------------
// Rigid-transform algebra: transform_point, transform_vector, transform_multiply (= mul),
// transform_inverse.

template <typename T>
WEFT_FN vec_t<3, T> transform_point(const transform_t<T>& t, const vec_t<3, T>& x) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    vec_t<3, R> r = r_rotate(qload(t.q), vload(x), R(1)), p = vload(t.p);
    for (int i = 0; i < 3; ++i) r.c[i] += p.c[i];
    return vstore<T>(r);
}
template <typename T>
WEFT_FN void adj_transform_point(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                 vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> gq;
    vec_t<3, R> gx;
    r_adj_rotate(qload(t.q), vload(x), R(1), gq, gx, vload(adj_ret));
    qacc(adj_t.q, gq);
    vacc(adj_x, gx);
    adj_t.p += adj_ret;
}

template <typename T>
WEFT_FN vec_t<3, T> transform_vector(const transform_t<T>& t, const vec_t<3, T>& v) {
    return quat_rotate(t.q, v);
}
template <typename T>
WEFT_FN void adj_transform_vector(const transform_t<T>& t, const vec_t<3, T>& v, transform_t<T>& adj_t,
                                  vec_t<3, T>& adj_v, const vec_t<3, T>& adj_ret) {
    adj_quat_rotate(t.q, v, adj_t.q, adj_v, adj_ret);
}

namespace transform_detail {

// (m @ (x, h))[0:3] for a row-major 4x4 m, h = 1 (point) or 0 (vector).
template <typename T>
WEFT_FN vec_t<3, T> r_mat44_apply(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, bool point) {
    typedef compute_t<T> R;
    vec_t<3, T> r;
    for (int i = 0; i < 3; ++i) {
        R s = point ? R(m.data[i][3]) : R(0);
        for (int j = 0; j < 3; ++j) s += R(m.data[i][j]) * R(x.c[j]);
        r.c[i] = T(s);
    }
    return r;
}
template <typename T>
WEFT_FN void r_adj_mat44_apply(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, bool point, mat_t<4, 4, T>& adj_m,
                               vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    typedef compute_t<T> R;
    for (int j = 0; j < 3; ++j) {
        R s = R(0);
        for (int i = 0; i < 3; ++i) s += R(m.data[i][j]) * R(adj_ret.c[i]);
        accum(adj_x.c[j], s);
    }
    for (int i = 0; i < 3; ++i) {
        R g = R(adj_ret.c[i]);
        for (int j = 0; j < 3; ++j) accum(adj_m.data[i][j], g * R(x.c[j]));
        if (point) accum(adj_m.data[i][3], g);
    }
}

}  // namespace transform_detail

template <typename T>
WEFT_FN vec_t<3, T> transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    return transform_detail::r_mat44_apply(m, x, true);
}
template <typename T>
WEFT_FN void adj_transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                 vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    transform_detail::r_adj_mat44_apply(m, x, true, adj_m, adj_x, adj_ret);
}
template <typename T>
WEFT_FN vec_t<3, T> transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& v) {
    return transform_detail::r_mat44_apply(m, v, false);
}
template <typename T>
WEFT_FN void adj_transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& v, mat_t<4, 4, T>& adj_m,
                                  vec_t<3, T>& adj_v, const vec_t<3, T>& adj_ret) {
    transform_detail::r_adj_mat44_apply(m, v, false, adj_m, adj_v, adj_ret);
}

template <typename T>
WEFT_FN transform_t<T> transform_multiply(const transform_t<T>& a, const transform_t<T>& b) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> qa = qload(a.q);
    vec_t<3, R> p = r_rotate(qa, vload(b.p), R(1)), pa = vload(a.p);
    for (int i = 0; i < 3; ++i) p.c[i] += pa.c[i];
    transform_t<T> r;
    r.p = vstore<T>(p);
    r.q = qstore<T>(r_qmul(qa, qload(b.q)));
    return r;
}
template <typename T>
WEFT_FN void adj_transform_multiply(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a,
                                    transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> qa = qload(a.q), gqa, gqb;
    vec_t<3, R> gpb;
    r_adj_rotate(qa, vload(b.p), R(1), gqa, gpb, vload(adj_ret.p));
    r_adj_qmul(qa, qload(b.q), gqa, gqb, qload(adj_ret.q));
    adj_a.p += adj_ret.p;
    qacc(adj_a.q, gqa);
    vacc(adj_b.p, gpb);
    qacc(adj_b.q, gqb);
}
template <typename T>
WEFT_FN transform_t<T> mul(const transform_t<T>& a, const transform_t<T>& b) {
    return transform_multiply(a, b);
}
template <typename T>
WEFT_FN void adj_mul(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a, transform_t<T>& adj_b,
                     const transform_t<T>& adj_ret) {
    adj_transform_multiply(a, b, adj_a, adj_b, adj_ret);
}

template <typename T>
WEFT_FN transform_t<T> transform_inverse(const transform_t<T>& t) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> qi = r_conj(qload(t.q));
    transform_t<T> r;
    r.p = vstore<T>(r_scale(r_rotate(qi, vload(t.p), R(1)), R(-1)));
    r.q = qstore<T>(qi);
    return r;
}
template <typename T>
WEFT_FN void adj_transform_inverse(const transform_t<T>& t, transform_t<T>& adj_t, const transform_t<T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> qi = r_conj(qload(t.q)), gqi = qload(adj_ret.q);
    vec_t<3, R> gp;
    r_adj_rotate(qi, vload(t.p), R(1), gqi, gp, r_scale(vload(adj_ret.p), R(-1)));
    vacc(adj_t.p, gp);
    qacc(adj_t.q, r_conj(gqi));
}

// ---------------------------------------------------------------------------------------------
// Comparisons (not differentiable) and printing.

template <typename T>
WEFT_FN bool cmp_eq(const transform_t<T>& a, const transform_t<T>& b) {
    return cmp_eq(a.p, b.p) && cmp_eq(a.q, b.q);
}
template <typename T>
WEFT_FN bool cmp_ne(const transform_t<T>& a, const transform_t<T>& b) {
    return !cmp_eq(a, b);
}

template <typename T>
WEFT_FN void print_value(const transform_t<T>& t) {
    printf("(");
    for (int i = 0; i < 3; ++i) {
        if (i) printf(" ");
        print_value(t.p.c[i]);
    }
    printf(") (");
    print_value(t.q);
    printf(")");
}

}  // namespace weft
