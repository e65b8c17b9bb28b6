// weft quaternion builtins: forward and adjoint C++ of every builtin on quat_t<T> (T = float16,
// float32, float64; float16 is computed in float32 and rounded once per result component).
//
// Calling convention (as in scalar.h / vec.h): forward `R weft::f(inputs...)`, adjoint
// `void weft::adj_f(inputs..., adj_inputs&..., adj_ret)` that only ever accumulates (+=).
// Constructors take the result type as their first, explicit template argument:
//   weft::quat_make<weft::quat_t<weft::float32>>(x, y, z, w)
//   weft::adj_quat_make<Q>(x, y, z, w, adj_x, adj_y, adj_z, adj_w, adj_ret)
// Builtins with several results (Warp's output parameters) return a weft::tuple_t (tuple.h).
//
// Semantics, checked against warp-lang 1.19 on the CPU (float32 and float64 probes):
//   - Layout {x, y, z, w}, w real. mul(a, b) is the Hamilton product; quat_rpy(r, p, y) is
//     qz(y) * qy(p) * qx(r) (roll about x applied first).
//   - quat_from_axis_angle(axis, a) = (axis * sin(a/2), cos(a/2)); the axis is NOT normalised.
//   - quat_inverse(q) is the conjugate (-x, -y, -z, w), also for non-unit q.
//   - quat_rotate(q, v) = v (2w^2 - 1) + 2w (u x v) + 2u (u . v), u = (x, y, z); quat_rotate_inv
//     flips the sign of the cross term. No normalisation (a non-unit q scales/shears).
//   - quat_to_matrix(q): column j is quat_rotate(q, e_j) (so quat_to_matrix(0) == -I).
//   - quat_from_matrix(m): Shepperd's method on the upper-left 3x3 block (mat44 overload ignores
//     the rest): trace >= 0 -> w branch; else the largest diagonal entry, ties to the lower index
//     (x, then y); the result is normalised; no sign canonicalisation (w may be negative).
//   - quat_to_axis_angle(q): s = (w < 0 ? -1 : 1); axis = s * normalize(u) (zero if u == 0);
//     angle = 2 atan2(|u|, s w), in [0, pi]. Works for non-unit q.
//   - quat_slerp(a, b, t) = a * exp(t log(a^-1 b)) computed as Warp does, through the conjugate
//     and quat_to_axis_angle; so it takes the short path (the sign of b does not matter),
//     extrapolates for t outside [0, 1], and slerp(a, a, t) == a.
//   - normalize(q) is (0, 0, 0, 1) when length(q) == 0 (vectors give zero); its gradient there
//     is zero, as is length's.
//   - lerp(a, b, t), add, sub, neg, pos, mul/div by a scalar and scalar / quat are component-wise.
//   - print: "x y z w" (components "%g", single spaces, no trailing space).
// Gradient conventions: exact derivatives of the forward computation; where it is not
// differentiable (normalize/length/axis at a zero vector part, the branch switches of
// quat_from_matrix, the sign flip of quat_to_axis_angle at w == 0) the one-sided derivative of
// the branch taken. quat_slerp's adjoint is the smooth one through a^-1 b == identity (the
// composition through quat_to_axis_angle is singular there, but slerp is not).
// Deviations: quat_to_axis_angle returns tuple_t<vec3, T>; quat_to_axis_angle_axis/_angle return
// the parts (for an IR that wants one result per call).
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::, no lambdas.
#pragma once

#include "scalar.h"
#include "tuple.h"
#include "vec.h"
#include "vec_types.h"

namespace weft {

template <typename Q>
struct quat_traits;
template <typename T>
struct quat_traits<quat_t<T>> {
    typedef T scalar;
};

// ---------------------------------------------------------------------------------------------
// Working-precision helpers (R = compute_t<T>: float for float16, else T). Shared with
// transform.h and spatial.h; the names are prefixed so that they never compete with the builtins.
namespace quat_detail {

template <typename T>
WEFT_FN quat_t<compute_t<T>> qload(const quat_t<T>& q) {
    typedef compute_t<T> R;
    return quat_t<R>(R(q.x), R(q.y), R(q.z), R(q.w));
}
template <typename T, typename R>
WEFT_FN quat_t<T> qstore(const quat_t<R>& q) {
    return quat_t<T>(T(q.x), T(q.y), T(q.z), T(q.w));
}
template <typename T>
WEFT_FN vec_t<3, compute_t<T>> vload(const vec_t<3, T>& v) {
    vec_t<3, compute_t<T>> r;
    for (int i = 0; i < 3; ++i) r.c[i] = compute_t<T>(v.c[i]);
    return r;
}
template <typename T, typename R>
WEFT_FN vec_t<3, T> vstore(const vec_t<3, R>& v) {
    vec_t<3, T> r;
    for (int i = 0; i < 3; ++i) r.c[i] = T(v.c[i]);
    return r;
}
// adj += g (g in working precision).
template <typename T, typename R>
WEFT_FN void qacc(quat_t<T>& adj, const quat_t<R>& g) {
    for (int i = 0; i < 4; ++i) accum(adj[i], compute_t<T>(g[i]));
}
template <typename T, typename R>
WEFT_FN void vacc(vec_t<3, T>& adj, const vec_t<3, R>& g) {
    for (int i = 0; i < 3; ++i) accum(adj.c[i], compute_t<T>(g.c[i]));
}

template <typename R>
WEFT_FN R r_dot3(const vec_t<3, R>& a, const vec_t<3, R>& b) {
    return a.c[0] * b.c[0] + a.c[1] * b.c[1] + a.c[2] * b.c[2];
}
template <typename R>
WEFT_FN vec_t<3, R> r_cross(const vec_t<3, R>& a, const vec_t<3, R>& b) {
    vec_t<3, R> r;
    r.c[0] = a.c[1] * b.c[2] - a.c[2] * b.c[1];
    r.c[1] = a.c[2] * b.c[0] - a.c[0] * b.c[2];
    r.c[2] = a.c[0] * b.c[1] - a.c[1] * b.c[0];
    return r;
}
template <typename R>
WEFT_FN vec_t<3, R> r_axpy(R a, const vec_t<3, R>& x, const vec_t<3, R>& y) {  // a x + y
    vec_t<3, R> r;
    for (int i = 0; i < 3; ++i) r.c[i] = a * x.c[i] + y.c[i];
    return r;
}
template <typename R>
WEFT_FN vec_t<3, R> r_scale(const vec_t<3, R>& x, R a) {
    vec_t<3, R> r;
    for (int i = 0; i < 3; ++i) r.c[i] = x.c[i] * a;
    return r;
}
template <typename R>
WEFT_FN vec_t<3, R> r_vpart(const quat_t<R>& q) {
    vec_t<3, R> r;
    r.c[0] = q.x;
    r.c[1] = q.y;
    r.c[2] = q.z;
    return r;
}
template <typename R>
WEFT_FN quat_t<R> r_qmake(const vec_t<3, R>& v, R w) {
    return quat_t<R>(v.c[0], v.c[1], v.c[2], w);
}
template <typename R>
WEFT_FN R r_qdot(const quat_t<R>& a, const quat_t<R>& b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
template <typename R>
WEFT_FN quat_t<R> r_conj(const quat_t<R>& q) {
    return quat_t<R>(-q.x, -q.y, -q.z, q.w);
}

// Hamilton product. Its adjoints: adj_a += g * conj(b), adj_b += conj(a) * g.
template <typename R>
WEFT_FN quat_t<R> r_qmul(const quat_t<R>& a, const quat_t<R>& b) {
    return quat_t<R>(a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,  //
                     a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,  //
                     a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,  //
                     a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z);
}
template <typename R>
WEFT_FN void r_adj_qmul(const quat_t<R>& a, const quat_t<R>& b, quat_t<R>& adj_a, quat_t<R>& adj_b,
                        const quat_t<R>& g) {
    adj_a += r_qmul(g, r_conj(b));
    adj_b += r_qmul(r_conj(a), g);
}

// v (2w^2 - 1) + sgn 2w (u x v) + 2u (u . v); sgn = +1 rotates, -1 rotates by the inverse.
template <typename R>
WEFT_FN vec_t<3, R> r_rotate(const quat_t<R>& q, const vec_t<3, R>& v, R sgn) {
    vec_t<3, R> u = r_vpart(q);
    vec_t<3, R> c = r_cross(u, v);
    R a = R(2) * q.w * q.w - R(1), b = sgn * R(2) * q.w, d = R(2) * r_dot3(u, v);
    vec_t<3, R> r;
    for (int i = 0; i < 3; ++i) r.c[i] = v.c[i] * a + c.c[i] * b + u.c[i] * d;
    return r;
}
template <typename R>
WEFT_FN void r_adj_rotate(const quat_t<R>& q, const vec_t<3, R>& v, R sgn, quat_t<R>& adj_q, vec_t<3, R>& adj_v,
                          const vec_t<3, R>& g) {
    vec_t<3, R> u = r_vpart(q);
    R a = R(2) * q.w * q.w - R(1), b = sgn * R(2) * q.w;
    R ug = r_dot3(u, g), uv = r_dot3(u, v);
    vec_t<3, R> gxu = r_cross(g, u), vxg = r_cross(v, g);
    for (int i = 0; i < 3; ++i) adj_v.c[i] += a * g.c[i] + b * gxu.c[i] + R(2) * ug * u.c[i];
    adj_q.x += b * vxg.c[0] + R(2) * (uv * g.c[0] + ug * v.c[0]);
    adj_q.y += b * vxg.c[1] + R(2) * (uv * g.c[1] + ug * v.c[1]);
    adj_q.z += b * vxg.c[2] + R(2) * (uv * g.c[2] + ug * v.c[2]);
    adj_q.w += R(4) * q.w * r_dot3(g, v) + sgn * R(2) * r_dot3(g, r_cross(u, v));
}

// Components of quat_to_axis_angle, with the sign flip that keeps the angle in [0, pi].
template <typename R>
struct axis_angle_parts {
    R s;             // -1 when w < 0, else 1
    vec_t<3, R> u;   // vector part
    R n;             // |u|
    R w;             // real part
};
template <typename R>
WEFT_FN axis_angle_parts<R> r_axis_angle_parts(const quat_t<R>& q) {
    axis_angle_parts<R> p;
    p.s = q.w < R(0) ? R(-1) : R(1);
    p.u = r_vpart(q);
    p.n = fmath::sqrt(r_dot3(p.u, p.u));
    p.w = q.w;
    return p;
}
template <typename R>
WEFT_FN vec_t<3, R> r_axis(const axis_angle_parts<R>& p) {
    vec_t<3, R> a;  // normalize(u) is zero for u == 0; the sign multiplies after (gives -0 like Warp)
    if (p.n > R(0)) a = r_scale(p.u, R(1) / p.n);
    return r_scale(a, p.s);
}
template <typename R>
WEFT_FN R r_angle(const axis_angle_parts<R>& p) {
    return R(2) * fmath::atan2(p.n, p.s * p.w);
}
// Adjoint of (axis, angle) with respect to q, given their adjoints.
template <typename R>
WEFT_FN void r_adj_axis_angle(const axis_angle_parts<R>& p, quat_t<R>& adj_q, const vec_t<3, R>& g_axis,
                              R g_angle) {
    if (p.n > R(0)) {
        vec_t<3, R> a = r_scale(p.u, R(1) / p.n);
        R ag = r_dot3(a, g_axis);
        R r2 = p.n * p.n + p.w * p.w;
        // d angle / d u = 2 s w / r2 * u / n
        R k = g_angle * R(2) * p.s * p.w / r2;
        adj_q.x += p.s * (g_axis.c[0] - a.c[0] * ag) / p.n + k * a.c[0];
        adj_q.y += p.s * (g_axis.c[1] - a.c[1] * ag) / p.n + k * a.c[1];
        adj_q.z += p.s * (g_axis.c[2] - a.c[2] * ag) / p.n + k * a.c[2];
        adj_q.w += g_angle * R(-2) * p.s * p.n / r2;
    }
}

// quat_rpy's value is multilinear in the (cos, sin) pairs of the half angles, so its derivative
// with respect to one angle is the same expression with that pair replaced by (-sin/2, cos/2).
template <typename R>
WEFT_FN quat_t<R> r_rpy(R cr, R sr, R cp, R sp, R cy, R sy) {
    return quat_t<R>(sr * cp * cy - cr * sp * sy,  //
                     cr * sp * cy + sr * cp * sy,  //
                     cr * cp * sy - sr * sp * cy,  //
                     cr * cp * cy + sr * sp * sy);
}

}  // namespace quat_detail

// ---------------------------------------------------------------------------------------------
// Construction: quat_zero<Q>(), quat_identity<Q>(), quat_make<Q>(x, y, z, w),
// quat_from_parts<Q>(ijk, real) (Warp's quaternion(ijk, real)), quat_convert<Q>(other).

template <typename Q>
WEFT_FN Q quat_zero() {
    return Q();
}
template <typename Q>
WEFT_FN void adj_quat_zero(const Q& adj_ret) {}

template <typename Q>
WEFT_FN Q quat_identity() {
    typedef typename quat_traits<Q>::scalar T;
    return Q(T(0), T(0), T(0), T(1));
}
template <typename Q>
WEFT_FN void adj_quat_identity(const Q& adj_ret) {}

template <typename Q, typename S>
WEFT_FN Q quat_make(S x, S y, S z, S w) {
    typedef typename quat_traits<Q>::scalar T;
    return Q(T(x), T(y), T(z), T(w));
}
template <typename Q, typename S>
WEFT_FN void adj_quat_make(S x, S y, S z, S w, S& adj_x, S& adj_y, S& adj_z, S& adj_w, const Q& adj_ret) {
    accum(adj_x, compute_t<S>(adj_ret.x));
    accum(adj_y, compute_t<S>(adj_ret.y));
    accum(adj_z, compute_t<S>(adj_ret.z));
    accum(adj_w, compute_t<S>(adj_ret.w));
}

template <typename Q, typename T>
WEFT_FN Q quat_from_parts(const vec_t<3, T>& ijk, T real) {
    return Q(ijk.c[0], ijk.c[1], ijk.c[2], real);
}
template <typename Q, typename T>
WEFT_FN void adj_quat_from_parts(const vec_t<3, T>& ijk, T real, vec_t<3, T>& adj_ijk, T& adj_real,
                                 const Q& adj_ret) {
    for (int i = 0; i < 3; ++i) accum(adj_ijk.c[i], compute_t<T>(adj_ret[i]));
    accum(adj_real, compute_t<T>(adj_ret.w));
}

template <typename Q, typename S>
WEFT_FN Q quat_convert(const quat_t<S>& q) {
    typedef typename quat_traits<Q>::scalar T;
    return Q(cast<T>(q.x), cast<T>(q.y), cast<T>(q.z), cast<T>(q.w));
}
template <typename Q, typename S>
WEFT_FN void adj_quat_convert(const quat_t<S>& q, quat_t<S>& adj_q, const Q& adj_ret) {
    typedef typename quat_traits<Q>::scalar T;
    for (int i = 0; i < 4; ++i) adj_cast<T>(q[i], adj_q[i], adj_ret[i]);
}

// ---------------------------------------------------------------------------------------------
// Component access: extract(q, loc, i), assign_copy(q, loc, i, value). Indices wrap like Python
// (q[-1] is w); out of [-4, 4) raises a component error (vec.h's component_index).

template <typename T, typename I>
WEFT_FN T extract(const quat_t<T>& q, int32 loc, I i) {
    return q[component_index(loc, i, 4)];
}
template <typename T, typename I>
WEFT_FN void adj_extract(const quat_t<T>& q, int32 loc, I i, quat_t<T>& adj_q, int32& adj_loc, I& adj_i,
                         T adj_ret) {
    accum(adj_q[component_index(loc, i, 4)], compute_t<T>(adj_ret));
}

template <typename T, typename I, typename S>
WEFT_FN quat_t<T> assign_copy(const quat_t<T>& q, int32 loc, I i, S value) {
    quat_t<T> r = q;
    r[component_index(loc, i, 4)] = T(value);
    return r;
}
template <typename T, typename I, typename S>
WEFT_FN void adj_assign_copy(const quat_t<T>& q, int32 loc, I i, S value, quat_t<T>& adj_q, int32& adj_loc,
                             I& adj_i, S& adj_value, const quat_t<T>& adj_ret) {
    int k = component_index(loc, i, 4);
    for (int j = 0; j < 4; ++j)
        if (j != k) accum(adj_q[j], compute_t<T>(adj_ret[j]));
    accum(adj_value, compute_t<S>(compute_t<T>(adj_ret[k])));
}

// ---------------------------------------------------------------------------------------------
// Component-wise arithmetic: add sub neg pos, mul/div by a scalar (both orders), lerp.
// These overload scalar.h's templates and win overload resolution by partial ordering.

#define WEFT_QUAT_CW2(name)                                                                          \
    template <typename T>                                                                            \
    WEFT_FN quat_t<T> name(const quat_t<T>& a, const quat_t<T>& b) {                                 \
        return quat_t<T>(name(a.x, b.x), name(a.y, b.y), name(a.z, b.z), name(a.w, b.w));            \
    }                                                                                                \
    template <typename T>                                                                            \
    WEFT_FN void adj_##name(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b, \
                            const quat_t<T>& adj_ret) {                                              \
        for (int i = 0; i < 4; ++i) adj_##name(a[i], b[i], adj_a[i], adj_b[i], adj_ret[i]);          \
    }
WEFT_QUAT_CW2(add)
WEFT_QUAT_CW2(sub)
#undef WEFT_QUAT_CW2

template <typename T>
WEFT_FN quat_t<T> neg(const quat_t<T>& a) {
    return quat_t<T>(neg(a.x), neg(a.y), neg(a.z), neg(a.w));
}
template <typename T>
WEFT_FN void adj_neg(const quat_t<T>& a, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    for (int i = 0; i < 4; ++i) accum(adj_a[i], -compute_t<T>(adj_ret[i]));
}
template <typename T>
WEFT_FN quat_t<T> pos(const quat_t<T>& a) {
    return a;
}
template <typename T>
WEFT_FN void adj_pos(const quat_t<T>& a, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    adj_a += adj_ret;
}

template <typename T>
WEFT_FN quat_t<T> mul(const quat_t<T>& a, T s) {
    return quat_t<T>(mul(a.x, s), mul(a.y, s), mul(a.z, s), mul(a.w, s));
}
template <typename T>
WEFT_FN void adj_mul(const quat_t<T>& a, T s, quat_t<T>& adj_a, T& adj_s, const quat_t<T>& adj_ret) {
    for (int i = 0; i < 4; ++i) adj_mul(a[i], s, adj_a[i], adj_s, adj_ret[i]);
}
template <typename T>
WEFT_FN quat_t<T> mul(T s, const quat_t<T>& a) {
    return quat_t<T>(mul(s, a.x), mul(s, a.y), mul(s, a.z), mul(s, a.w));
}
template <typename T>
WEFT_FN void adj_mul(T s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    for (int i = 0; i < 4; ++i) adj_mul(s, a[i], adj_s, adj_a[i], adj_ret[i]);
}
template <typename T>
WEFT_FN quat_t<T> div(const quat_t<T>& a, T s) {
    return quat_t<T>(div(a.x, s), div(a.y, s), div(a.z, s), div(a.w, s));
}
template <typename T>
WEFT_FN void adj_div(const quat_t<T>& a, T s, quat_t<T>& adj_a, T& adj_s, const quat_t<T>& adj_ret) {
    for (int i = 0; i < 4; ++i) adj_div(a[i], s, adj_a[i], adj_s, adj_ret[i]);
}
template <typename T>
WEFT_FN quat_t<T> div(T s, const quat_t<T>& a) {
    return quat_t<T>(div(s, a.x), div(s, a.y), div(s, a.z), div(s, a.w));
}
template <typename T>
WEFT_FN void adj_div(T s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    for (int i = 0; i < 4; ++i) adj_div(s, a[i], adj_s, adj_a[i], adj_ret[i]);
}

template <typename T>
WEFT_FN quat_t<T> lerp(const quat_t<T>& a, const quat_t<T>& b, T t) {
    return quat_t<T>(lerp(a.x, b.x, t), lerp(a.y, b.y, t), lerp(a.z, b.z, t), lerp(a.w, b.w, t));
}
template <typename T>
WEFT_FN void adj_lerp(const quat_t<T>& a, const quat_t<T>& b, T t, quat_t<T>& adj_a, quat_t<T>& adj_b, T& adj_t,
                      const quat_t<T>& adj_ret) {
    for (int i = 0; i < 4; ++i) adj_lerp(a[i], b[i], t, adj_a[i], adj_b[i], adj_t, adj_ret[i]);
}

// ---------------------------------------------------------------------------------------------
// Hamilton product mul(a, b).

template <typename T>
WEFT_FN quat_t<T> mul(const quat_t<T>& a, const quat_t<T>& b) {
    using namespace quat_detail;
    return qstore<T>(r_qmul(qload(a), qload(b)));
}
template <typename T>
WEFT_FN void adj_mul(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b,
                     const quat_t<T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> ga, gb;
    r_adj_qmul(qload(a), qload(b), ga, gb, qload(adj_ret));
    qacc(adj_a, ga);
    qacc(adj_b, gb);
}

// ---------------------------------------------------------------------------------------------
// dot, length, length_sq, normalize.

template <typename T>
WEFT_FN T dot(const quat_t<T>& a, const quat_t<T>& b) {
    return T(quat_detail::r_qdot(quat_detail::qload(a), quat_detail::qload(b)));
}
template <typename T>
WEFT_FN void adj_dot(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b, T adj_ret) {
    typedef compute_t<T> R;
    R g = R(adj_ret);
    for (int i = 0; i < 4; ++i) {
        accum(adj_a[i], R(b[i]) * g);
        accum(adj_b[i], R(a[i]) * g);
    }
}

template <typename T>
WEFT_FN T length_sq(const quat_t<T>& a) {
    return T(quat_detail::r_qdot(quat_detail::qload(a), quat_detail::qload(a)));
}
template <typename T>
WEFT_FN void adj_length_sq(const quat_t<T>& a, quat_t<T>& adj_a, T adj_ret) {
    typedef compute_t<T> R;
    for (int i = 0; i < 4; ++i) accum(adj_a[i], R(2) * R(a[i]) * R(adj_ret));
}

template <typename T>
WEFT_FN T length(const quat_t<T>& a) {
    quat_t<compute_t<T>> q = quat_detail::qload(a);
    return T(fmath::sqrt(quat_detail::r_qdot(q, q)));
}
template <typename T>
WEFT_FN void adj_length(const quat_t<T>& a, quat_t<T>& adj_a, T adj_ret) {
    typedef compute_t<T> R;
    quat_t<R> q = quat_detail::qload(a);
    R l = fmath::sqrt(quat_detail::r_qdot(q, q));
    if (l > R(0))
        for (int i = 0; i < 4; ++i) accum(adj_a[i], q[i] / l * R(adj_ret));
}

template <typename T>
WEFT_FN quat_t<T> normalize(const quat_t<T>& a) {
    typedef compute_t<T> R;
    quat_t<R> q = quat_detail::qload(a);
    R l = fmath::sqrt(quat_detail::r_qdot(q, q));
    if (!(l > R(0))) return quat_t<T>(T(0), T(0), T(0), T(1));
    return quat_t<T>(T(q.x / l), T(q.y / l), T(q.z / l), T(q.w / l));
}
// adj += (g - n (n . g)) / l, n = q / l.
template <typename T>
WEFT_FN void adj_normalize(const quat_t<T>& a, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    typedef compute_t<T> R;
    using namespace quat_detail;
    quat_t<R> q = qload(a), g = qload(adj_ret);
    R l = fmath::sqrt(r_qdot(q, q));
    if (!(l > R(0))) return;
    R ng = r_qdot(q, g) / l;
    for (int i = 0; i < 4; ++i) accum(adj_a[i], (g[i] - q[i] / l * ng) / l);
}

// ---------------------------------------------------------------------------------------------
// Rotations: quat_inverse, quat_rotate, quat_rotate_inv, quat_to_matrix, quat_from_matrix,
// quat_from_axis_angle, quat_to_axis_angle, quat_rpy, quat_slerp.

template <typename T>
WEFT_FN quat_t<T> quat_inverse(const quat_t<T>& q) {
    return quat_t<T>(neg(q.x), neg(q.y), neg(q.z), q.w);
}
template <typename T>
WEFT_FN void adj_quat_inverse(const quat_t<T>& q, quat_t<T>& adj_q, const quat_t<T>& adj_ret) {
    typedef compute_t<T> R;
    accum(adj_q.x, -R(adj_ret.x));
    accum(adj_q.y, -R(adj_ret.y));
    accum(adj_q.z, -R(adj_ret.z));
    accum(adj_q.w, R(adj_ret.w));
}

template <typename T>
WEFT_FN vec_t<3, T> quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    return vstore<T>(r_rotate(qload(q), vload(v), R(1)));
}
template <typename T>
WEFT_FN void adj_quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q, vec_t<3, T>& adj_v,
                             const vec_t<3, T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> gq;
    vec_t<3, R> gv;
    r_adj_rotate(qload(q), vload(v), R(1), gq, gv, vload(adj_ret));
    qacc(adj_q, gq);
    vacc(adj_v, gv);
}

template <typename T>
WEFT_FN vec_t<3, T> quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    return vstore<T>(r_rotate(qload(q), vload(v), R(-1)));
}
template <typename T>
WEFT_FN void adj_quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q, vec_t<3, T>& adj_v,
                                 const vec_t<3, T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> gq;
    vec_t<3, R> gv;
    r_adj_rotate(qload(q), vload(v), R(-1), gq, gv, vload(adj_ret));
    qacc(adj_q, gq);
    vacc(adj_v, gv);
}

// Column j is quat_rotate(q, e_j).
template <typename T>
WEFT_FN mat_t<3, 3, T> quat_to_matrix(const quat_t<T>& q) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> qr = qload(q);
    mat_t<3, 3, T> m;
    for (int j = 0; j < 3; ++j) {
        vec_t<3, R> e;
        e.c[j] = R(1);
        vec_t<3, R> col = r_rotate(qr, e, R(1));
        for (int i = 0; i < 3; ++i) m.data[i][j] = T(col.c[i]);
    }
    return m;
}
template <typename T>
WEFT_FN void adj_quat_to_matrix(const quat_t<T>& q, quat_t<T>& adj_q, const mat_t<3, 3, T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> qr = qload(q), gq;
    for (int j = 0; j < 3; ++j) {
        vec_t<3, R> e, g, unused;
        e.c[j] = R(1);
        for (int i = 0; i < 3; ++i) g.c[i] = R(adj_ret.data[i][j]);
        r_adj_rotate(qr, e, R(1), gq, unused, g);
    }
    qacc(adj_q, gq);
}

namespace quat_detail {

// Shepperd's method on m[0..2][0..2] (see the header comment), before normalisation.
// Branch b = 3 is the w branch; b = i < 3 the branch of diagonal entry i.
template <typename R, typename M>
WEFT_FN int r_from_matrix_branch(const M& m) {
    R tr = R(m.data[0][0]) + R(m.data[1][1]) + R(m.data[2][2]);
    if (tr >= R(0)) return 3;
    R d0 = R(m.data[0][0]), d1 = R(m.data[1][1]), d2 = R(m.data[2][2]);
    if (d0 >= d1 && d0 >= d2) return 0;
    return d1 >= d2 ? 1 : 2;
}
template <typename R, typename M>
WEFT_FN quat_t<R> r_from_matrix_raw(const M& m, int b) {
    quat_t<R> q;
    if (b == 3) {
        R h = fmath::sqrt(R(m.data[0][0]) + R(m.data[1][1]) + R(m.data[2][2]) + R(1));
        R f = R(0.5) / h;
        q.w = R(0.5) * h;
        q.x = (R(m.data[2][1]) - R(m.data[1][2])) * f;
        q.y = (R(m.data[0][2]) - R(m.data[2][0])) * f;
        q.z = (R(m.data[1][0]) - R(m.data[0][1])) * f;
    } else {
        int i = b, j = (b + 1) % 3, k = (b + 2) % 3;
        R h = fmath::sqrt(R(m.data[i][i]) - R(m.data[j][j]) - R(m.data[k][k]) + R(1));
        R f = R(0.5) / h;
        q[i] = R(0.5) * h;
        q[j] = (R(m.data[i][j]) + R(m.data[j][i])) * f;
        q[k] = (R(m.data[i][k]) + R(m.data[k][i])) * f;
        q.w = (R(m.data[k][j]) - R(m.data[j][k])) * f;
    }
    return q;
}
template <typename R, typename M>
WEFT_FN quat_t<R> r_from_matrix(const M& m) {
    quat_t<R> q = r_from_matrix_raw<R>(m, r_from_matrix_branch<R>(m));
    R l = fmath::sqrt(r_qdot(q, q));
    return quat_t<R>(q.x / l, q.y / l, q.z / l, q.w / l);
}
// Accumulates d/dm of <g, from_matrix(m)> into adj_m (only the upper-left 3x3 block).
template <typename R, unsigned N, typename T>
WEFT_FN void r_adj_from_matrix(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const quat_t<R>& g) {
    int b = r_from_matrix_branch<R>(m);
    quat_t<R> q = r_from_matrix_raw<R>(m, b);
    R l = fmath::sqrt(r_qdot(q, q));
    R ng = r_qdot(q, g) / (l * l);
    quat_t<R> a;  // adjoint of the raw (unnormalised) quaternion
    for (int c = 0; c < 4; ++c) a[c] = (g[c] - q[c] * ng) / l;
    R gm[3][3] = {{R(0), R(0), R(0)}, {R(0), R(0), R(0)}, {R(0), R(0), R(0)}};
    if (b == 3) {
        R h = fmath::sqrt(R(m.data[0][0]) + R(m.data[1][1]) + R(m.data[2][2]) + R(1));
        R f = R(0.5) / h;
        R d0 = R(m.data[2][1]) - R(m.data[1][2]), d1 = R(m.data[0][2]) - R(m.data[2][0]);
        R d2 = R(m.data[1][0]) - R(m.data[0][1]);
        R adj_f = a.x * d0 + a.y * d1 + a.z * d2;
        R adj_h = R(0.5) * a.w - R(0.5) / (h * h) * adj_f;
        gm[2][1] += a.x * f;
        gm[1][2] -= a.x * f;
        gm[0][2] += a.y * f;
        gm[2][0] -= a.y * f;
        gm[1][0] += a.z * f;
        gm[0][1] -= a.z * f;
        for (int i = 0; i < 3; ++i) gm[i][i] += adj_h * f;  // dh/dm_ii = 1 / (2h) = f
    } else {
        int i = b, j = (b + 1) % 3, k = (b + 2) % 3;
        R h = fmath::sqrt(R(m.data[i][i]) - R(m.data[j][j]) - R(m.data[k][k]) + R(1));
        R f = R(0.5) / h;
        R sj = R(m.data[i][j]) + R(m.data[j][i]), sk = R(m.data[i][k]) + R(m.data[k][i]);
        R dw = R(m.data[k][j]) - R(m.data[j][k]);
        R adj_f = a[j] * sj + a[k] * sk + a.w * dw;
        R adj_h = R(0.5) * a[i] - R(0.5) / (h * h) * adj_f;
        gm[i][j] += a[j] * f;
        gm[j][i] += a[j] * f;
        gm[i][k] += a[k] * f;
        gm[k][i] += a[k] * f;
        gm[k][j] += a.w * f;
        gm[j][k] -= a.w * f;
        gm[i][i] += adj_h * f;
        gm[j][j] -= adj_h * f;
        gm[k][k] -= adj_h * f;
    }
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) accum(adj_m.data[r][c], compute_t<T>(gm[r][c]));
}

}  // namespace quat_detail

// mat33, or the upper-left block of a mat44.
template <unsigned N, typename T>
WEFT_FN quat_t<T> quat_from_matrix(const mat_t<N, N, T>& m) {
    static_assert(N == 3 || N == 4, "quat_from_matrix takes a mat33 or a mat44");
    return quat_detail::qstore<T>(quat_detail::r_from_matrix<compute_t<T>>(m));
}
template <unsigned N, typename T>
WEFT_FN void adj_quat_from_matrix(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const quat_t<T>& adj_ret) {
    quat_detail::r_adj_from_matrix(m, adj_m, quat_detail::qload(adj_ret));
}

template <typename T>
WEFT_FN quat_t<T> quat_from_axis_angle(const vec_t<3, T>& axis, T angle) {
    typedef compute_t<T> R;
    R h = R(0.5) * R(angle), s = fmath::sin(h);
    return quat_t<T>(T(R(axis.c[0]) * s), T(R(axis.c[1]) * s), T(R(axis.c[2]) * s), T(fmath::cos(h)));
}
template <typename T>
WEFT_FN void adj_quat_from_axis_angle(const vec_t<3, T>& axis, T angle, vec_t<3, T>& adj_axis, T& adj_angle,
                                      const quat_t<T>& adj_ret) {
    typedef compute_t<T> R;
    R h = R(0.5) * R(angle), s = fmath::sin(h), c = fmath::cos(h);
    R ga = R(0);
    for (int i = 0; i < 3; ++i) {
        accum(adj_axis.c[i], R(adj_ret[i]) * s);
        ga += R(adj_ret[i]) * R(axis.c[i]);
    }
    accum(adj_angle, R(0.5) * (c * ga - s * R(adj_ret.w)));
}

// Warp's quat_to_axis_angle(q) -> (axis, angle); also as two single-result builtins.
template <typename T>
WEFT_FN tuple_t<vec_t<3, T>, T> quat_to_axis_angle(const quat_t<T>& q) {
    using namespace quat_detail;
    axis_angle_parts<compute_t<T>> p = r_axis_angle_parts(qload(q));
    return make_tuple(vstore<T>(r_axis(p)), T(r_angle(p)));
}
template <typename T>
WEFT_FN void adj_quat_to_axis_angle(const quat_t<T>& q, quat_t<T>& adj_q, const tuple_t<vec_t<3, T>, T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> g;
    r_adj_axis_angle(r_axis_angle_parts(qload(q)), g, vload(tuple_get<0>(adj_ret)), R(tuple_get<1>(adj_ret)));
    qacc(adj_q, g);
}
template <typename T>
WEFT_FN vec_t<3, T> quat_to_axis_angle_axis(const quat_t<T>& q) {
    using namespace quat_detail;
    return vstore<T>(r_axis(r_axis_angle_parts(qload(q))));
}
template <typename T>
WEFT_FN void adj_quat_to_axis_angle_axis(const quat_t<T>& q, quat_t<T>& adj_q, const vec_t<3, T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> g;
    r_adj_axis_angle(r_axis_angle_parts(qload(q)), g, vload(adj_ret), R(0));
    qacc(adj_q, g);
}
template <typename T>
WEFT_FN T quat_to_axis_angle_angle(const quat_t<T>& q) {
    using namespace quat_detail;
    return T(r_angle(r_axis_angle_parts(qload(q))));
}
template <typename T>
WEFT_FN void adj_quat_to_axis_angle_angle(const quat_t<T>& q, quat_t<T>& adj_q, T adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    quat_t<R> g;
    r_adj_axis_angle(r_axis_angle_parts(qload(q)), g, vec_t<3, R>(), R(adj_ret));
    qacc(adj_q, g);
}

template <typename T>
WEFT_FN quat_t<T> quat_rpy(T roll, T pitch, T yaw) {
    typedef compute_t<T> R;
    R hr = R(0.5) * R(roll), hp = R(0.5) * R(pitch), hy = R(0.5) * R(yaw);
    return quat_detail::qstore<T>(quat_detail::r_rpy(fmath::cos(hr), fmath::sin(hr), fmath::cos(hp),
                                                      fmath::sin(hp), fmath::cos(hy), fmath::sin(hy)));
}
template <typename T>
WEFT_FN void adj_quat_rpy(T roll, T pitch, T yaw, T& adj_roll, T& adj_pitch, T& adj_yaw, const quat_t<T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    R hr = R(0.5) * R(roll), hp = R(0.5) * R(pitch), hy = R(0.5) * R(yaw);
    R cr = fmath::cos(hr), sr = fmath::sin(hr), cp = fmath::cos(hp), sp = fmath::sin(hp);
    R cy = fmath::cos(hy), sy = fmath::sin(hy);
    quat_t<R> g = qload(adj_ret);
    accum(adj_roll, r_qdot(g, r_rpy(R(-0.5) * sr, R(0.5) * cr, cp, sp, cy, sy)));
    accum(adj_pitch, r_qdot(g, r_rpy(cr, sr, R(-0.5) * sp, R(0.5) * cp, cy, sy)));
    accum(adj_yaw, r_qdot(g, r_rpy(cr, sr, cp, sp, R(-0.5) * sy, R(0.5) * cy)));
}

namespace quat_detail {

// slerp(a, b, t) = a * e, e = (S v, cos(t phi)) where d = conj(a) * b flipped to d.w >= 0 is
// (v, w), n = |v|, phi = atan2(n, w) and S = sin(t phi) / n (its limit t / w at n == 0).
// This is Warp's a * quat_from_axis_angle(axis, t * angle) with (axis, angle) of d, written so
// that it stays differentiable at n == 0.
template <typename R>
struct slerp_parts {
    quat_t<R> a, d;
    R s, n, w, phi, c, sn, S;
    vec_t<3, R> v;
};
template <typename R>
WEFT_FN slerp_parts<R> r_slerp_parts(const quat_t<R>& a, const quat_t<R>& b, R t) {
    slerp_parts<R> p;
    p.a = a;
    p.d = r_qmul(r_conj(a), b);
    p.s = p.d.w < R(0) ? R(-1) : R(1);
    p.v = r_scale(r_vpart(p.d), p.s);
    p.w = p.s * p.d.w;
    p.n = fmath::sqrt(r_dot3(p.v, p.v));
    p.phi = fmath::atan2(p.n, p.w);
    p.c = fmath::cos(t * p.phi);
    p.sn = fmath::sin(t * p.phi);
    if (p.n > R(0))
        p.S = p.sn / p.n;
    else
        p.S = p.w > R(0) ? t / p.w : R(0);
    return p;
}
template <typename R>
WEFT_FN quat_t<R> r_slerp_e(const slerp_parts<R>& p) {
    return r_qmake(r_scale(p.v, p.S), p.c);
}

}  // namespace quat_detail

template <typename T>
WEFT_FN quat_t<T> quat_slerp(const quat_t<T>& a, const quat_t<T>& b, T t) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    slerp_parts<R> p = r_slerp_parts(qload(a), qload(b), R(t));
    return qstore<T>(r_qmul(p.a, r_slerp_e(p)));
}
template <typename T>
WEFT_FN void adj_quat_slerp(const quat_t<T>& a, const quat_t<T>& b, T t, quat_t<T>& adj_a, quat_t<T>& adj_b,
                            T& adj_t, const quat_t<T>& adj_ret) {
    using namespace quat_detail;
    typedef compute_t<T> R;
    R tt = R(t);
    slerp_parts<R> p = r_slerp_parts(qload(a), qload(b), tt);
    quat_t<R> e = r_slerp_e(p), ga, ge;
    r_adj_qmul(p.a, e, ga, ge, qload(adj_ret));
    vec_t<3, R> gev = r_vpart(ge);
    R gew = ge.w;
    R r2 = p.n * p.n + p.w * p.w;
    vec_t<3, R> gv;
    R gw = R(0), gt = R(0);
    if (r2 > R(0) && !(p.n == R(0) && p.w <= R(0))) {
        R vg = r_dot3(p.v, gev);
        // S_n / n, where S_n = dS/dn = (t c phi_n n - sn) / n^2, phi_n = w / r2. Its limit at
        // n -> 0 is -(2t + t^3) / (3 w^3); use it where n^3 would underflow.
        R tiny = sizeof(R) == 4 ? R(1e-12) : R(1e-30);
        R sn_over_n;
        if (p.n > tiny)
            sn_over_n = (tt * p.c * (p.w / r2) * p.n - p.sn) / (p.n * p.n * p.n);
        else
            sn_over_n = -(R(2) * tt + tt * tt * tt) / (R(3) * p.w * p.w * p.w);
        R S_w = -tt * p.c / r2;
        R P = p.n > R(0) ? p.phi / p.n : R(1) / p.w;  // phi / n
        for (int i = 0; i < 3; ++i)
            gv.c[i] = p.S * gev.c[i] + sn_over_n * vg * p.v.c[i] - gew * tt * p.w * p.S / r2 * p.v.c[i];
        gw = vg * S_w + gew * tt * p.sn * p.n / r2;
        gt = vg * p.c * P - gew * p.sn * p.phi;
    }
    // (v, w) = s * d; d = conj(a) * b.
    quat_t<R> gd(p.s * gv.c[0], p.s * gv.c[1], p.s * gv.c[2], p.s * gw), gca, gb;
    r_adj_qmul(r_conj(p.a), qload(b), gca, gb, gd);
    ga += r_conj(gca);
    qacc(adj_a, ga);
    qacc(adj_b, gb);
    accum(adj_t, gt);
}

// ---------------------------------------------------------------------------------------------
// Comparisons (not differentiable) and printing.

template <typename T>
WEFT_FN bool cmp_eq(const quat_t<T>& a, const quat_t<T>& b) {
    return cmp_eq(a.x, b.x) && cmp_eq(a.y, b.y) && cmp_eq(a.z, b.z) && cmp_eq(a.w, b.w);
}
template <typename T>
WEFT_FN bool cmp_ne(const quat_t<T>& a, const quat_t<T>& b) {
    return !cmp_eq(a, b);
}

template <typename T>
WEFT_FN void print_value(const quat_t<T>& q) {
    for (int i = 0; i < 4; ++i) {
        if (i) printf(" ");
        print_value(q[i]);
    }
}

template <typename T>
WEFT_FN void expect_near(const quat_t<T>& a, const quat_t<T>& b, T tolerance) {
    for (int i = 0; i < 4; ++i)
        if (!near_(a[i], b[i], tolerance)) {
            expect_report("expect_near", a, b);
            return;
        }
}
template <typename T>
WEFT_FN void expect_near(const quat_t<T>& a, const quat_t<T>& b) {
    expect_near(a, b, T(1e-6));
}

}  // namespace weft
