// weft geometric tests: triangle/triangle intersection and the closest points of two edges.
//
//   int32 intersect_tri_tri(v0, v1, v2, u0, u1, u2)         vec3f or vec3d; not differentiable
//   vec3f closest_point_edge_edge(p1, q1, p2, q2, epsilon)  (s, t, distance); differentiable
//
// Semantics follow warp-lang 1.19:
//   - intersect_tri_tri is Moller's interval test ("A Fast Triangle-Triangle Intersection Test",
//     JGT 1997): a signed vertex distance to the other triangle's plane within 1e-6 counts as on
//     the plane; touching counts as intersecting; coplanar triangles are tested in 2D, in the
//     coordinate plane where their normal's projection is largest. float32 inputs compute in
//     float32 (so near-degenerate configurations may differ from the float64 overload). A vertex
//     on the other plane is its own crossing point, exactly: triangles sharing a vertex always
//     touch (Warp 1.19's division-free variant misses about 1 such pair in 7 to rounding).
//   - closest_point_edge_edge is Ericson's segment/segment closest points ("Real-Time Collision
//     Detection", 5.1.9): an edge whose squared length is <= epsilon is a point (its weight is 0);
//     non-parallel edges get s from the infinite lines (a*e - b^2 and b*f - c*e computed as
//     differences of products with one rounding, via fma), then t = (b*s + f)/e, and when t leaves
//     [0, 1] it is clamped and s recomputed for it. Parallel edges (a*e - b^2 <= 0) start at s = 0.
//   - Its adjoint is the chain rule through the branch the forward took; where the edges are
//     nearly parallel (a*e - b^2 <= 1e-6 a e, an angle under about 1e-3 rad) s is held constant
//     in the chain rule, as Warp does, so float32 noise in 1/(a*e - b^2) cannot blow the gradient
//     up: the gradient there is bounded but approximate. epsilon gets no gradient.
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::.
#pragma once

#include "scalar.h"
#include "vec_types.h"

namespace weft {

namespace intersect_detail {

// Small fixed-size helpers on raw components (T[3] / T[2]) in the input precision.
template <typename T>
WEFT_FN T dot3(const T* a, const T* b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

template <typename T>
WEFT_FN void cross3(const T* a, const T* b, T* r) {
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}

template <typename T>
WEFT_FN void sub3(const T* a, const T* b, T* r) {
    r[0] = a[0] - b[0];
    r[1] = a[1] - b[1];
    r[2] = a[2] - b[2];
}

template <typename T>
WEFT_FN T min2(T a, T b) {
    return b < a ? b : a;
}

template <typename T>
WEFT_FN T max2(T a, T b) {
    return a < b ? b : a;
}

// The plane n.x + d = 0 through triangle (a, b, c), and the signed (unnormalised) distances of
// the points p[0..2] to it; distances within 1e-6 of zero are snapped to zero (on the plane).
template <typename T>
WEFT_FN void plane_distances(const T* a, const T* b, const T* c, const T* const* p, T* n, T* dist) {
    T e1[3], e2[3];
    sub3(b, a, e1);
    sub3(c, a, e2);
    cross3(e1, e2, n);
    const T d = -dot3(n, a);
    for (int k = 0; k < 3; ++k) {
        dist[k] = dot3(n, p[k]) + d;
        if (fmath::fabs(dist[k]) < T(1e-6)) dist[k] = T(0);
    }
}

// The interval of the line where the two planes meet that a triangle covers, in the line's
// coordinate `proj` (one world axis). The triangle's lone vertex k (alone on its side of the other
// plane, or off the plane when the rest touch it) joins its two edges crossing the plane. Returns
// false when every vertex lies on the plane (coplanar triangles).
template <typename T>
WEFT_FN bool plane_line_interval(const T* proj, const T* dist, T& lo, T& hi) {
    int k;
    if (dist[0] * dist[1] > T(0))
        k = 2;
    else if (dist[0] * dist[2] > T(0))
        k = 1;
    else if (dist[1] * dist[2] > T(0) || dist[0] != T(0))
        k = 0;
    else if (dist[1] != T(0))
        k = 1;
    else if (dist[2] != T(0))
        k = 2;
    else
        return false;
    const int i = (k + 1) % 3;
    const int j = (k + 2) % 3;
    // dist[k] differs from dist[i] and dist[j] here: they are zero or on the other side. A vertex
    // on the plane is its own crossing, exactly, so that triangles sharing a vertex always touch.
    const T x = dist[i] == T(0) ? proj[i] : proj[k] + (proj[i] - proj[k]) * (dist[k] / (dist[k] - dist[i]));
    const T y = dist[j] == T(0) ? proj[j] : proj[k] + (proj[j] - proj[k]) * (dist[k] / (dist[k] - dist[j]));
    lo = min2(x, y);
    hi = max2(x, y);
    return true;
}

// Twice the signed area of the 2-d triangle (a, b, c).
template <typename T>
WEFT_FN T orient2(const T* a, const T* b, const T* c) {
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}

// Whether closed 2-d segments [p0, p1] and [q0, q1] share a point (touching and collinear overlap
// included).
template <typename T>
WEFT_FN bool segments_meet_2d(const T* p0, const T* p1, const T* q0, const T* q1) {
    for (int ax = 0; ax < 2; ++ax) {  // bounding boxes must overlap (decides the collinear case)
        if (max2(p0[ax], p1[ax]) < min2(q0[ax], q1[ax]) || max2(q0[ax], q1[ax]) < min2(p0[ax], p1[ax]))
            return false;
    }
    const T o1 = orient2(p0, p1, q0), o2 = orient2(p0, p1, q1);
    const T o3 = orient2(q0, q1, p0), o4 = orient2(q0, q1, p1);
    const bool q_straddles = (o1 <= T(0) && o2 >= T(0)) || (o1 >= T(0) && o2 <= T(0));
    const bool p_straddles = (o3 <= T(0) && o4 >= T(0)) || (o3 >= T(0) && o4 <= T(0));
    return q_straddles && p_straddles;
}

// Whether 2-d point p lies in the closed, non-degenerate triangle (a, b, c).
template <typename T>
WEFT_FN bool point_in_triangle_2d(const T* p, const T* a, const T* b, const T* c) {
    if (orient2(a, b, c) == T(0)) return false;
    const T o1 = orient2(a, b, p), o2 = orient2(b, c, p), o3 = orient2(c, a, p);
    const bool any_neg = o1 < T(0) || o2 < T(0) || o3 < T(0);
    const bool any_pos = o1 > T(0) || o2 > T(0) || o3 > T(0);
    return !(any_neg && any_pos);
}

// Coplanar triangles: project onto the coordinate plane where the normal n is longest and test
// every edge pair, then whole containment either way.
template <typename T>
WEFT_FN int32 coplanar_tri_tri(const T* n, const T* const* v, const T* const* u) {
    const T ax = fmath::fabs(n[0]), ay = fmath::fabs(n[1]), az = fmath::fabs(n[2]);
    int i0 = 1, i1 = 2;  // drop x
    if (az >= ax && az >= ay) {
        i0 = 0;  // drop z
        i1 = 1;
    } else if (ay >= ax) {
        i0 = 0;  // drop y
        i1 = 2;
    }
    T pv[3][2], pu[3][2];
    for (int k = 0; k < 3; ++k) {
        pv[k][0] = v[k][i0];
        pv[k][1] = v[k][i1];
        pu[k][0] = u[k][i0];
        pu[k][1] = u[k][i1];
    }
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            if (segments_meet_2d(pv[a], pv[(a + 1) % 3], pu[b], pu[(b + 1) % 3])) return 1;
    if (point_in_triangle_2d(pv[0], pu[0], pu[1], pu[2])) return 1;
    if (point_in_triangle_2d(pu[0], pv[0], pv[1], pv[2])) return 1;
    return 0;
}

template <typename T>
WEFT_FN int32 tri_tri(const T* v0, const T* v1, const T* v2, const T* u0, const T* u1, const T* u2) {
    const T* v[3] = {v0, v1, v2};
    const T* u[3] = {u0, u1, u2};
    T nv[3], nu[3], du[3], dv[3];
    // u against the plane of v: all strictly on one side -> apart
    plane_distances(v0, v1, v2, u, nv, du);
    if (du[0] * du[1] > T(0) && du[0] * du[2] > T(0)) return 0;
    plane_distances(u0, u1, u2, v, nu, dv);
    if (dv[0] * dv[1] > T(0) && dv[0] * dv[2] > T(0)) return 0;
    // both cross the other's plane: compare the intervals each covers on the planes' common line,
    // measured along the world axis the line is most aligned with
    T line[3];
    cross3(nv, nu, line);
    int axis = 0;
    T longest = fmath::fabs(line[0]);
    for (int k = 1; k < 3; ++k) {
        if (fmath::fabs(line[k]) > longest) {
            longest = fmath::fabs(line[k]);
            axis = k;
        }
    }
    const T pv[3] = {v0[axis], v1[axis], v2[axis]};
    const T pu[3] = {u0[axis], u1[axis], u2[axis]};
    T lo_v, hi_v, lo_u, hi_u;
    if (!plane_line_interval(pv, dv, lo_v, hi_v)) return coplanar_tri_tri(nv, v, u);
    if (!plane_line_interval(pu, du, lo_u, hi_u)) return coplanar_tri_tri(nv, v, u);
    return (hi_v < lo_u || hi_u < lo_v) ? 0 : 1;
}

}  // namespace intersect_detail

template <typename T>
WEFT_FN int32 intersect_tri_tri(const vec_t<3, T>& v0, const vec_t<3, T>& v1, const vec_t<3, T>& v2,
                                const vec_t<3, T>& u0, const vec_t<3, T>& u1, const vec_t<3, T>& u2) {
    return intersect_detail::tri_tri(v0.c, v1.c, v2.c, u0.c, u1.c, u2.c);
}

// ---------------------------------------------------------------------------------------------
// Closest points of two edges.

namespace intersect_detail {

// a*b - c*d with a single rounding of each product's error (Kahan's fma trick): keeps
// |d1|^2 |d2|^2 - (d1.d2)^2 accurate for nearly parallel edges.
WEFT_FN float32 diff_of_products(float32 a, float32 b, float32 c, float32 d) {
    const float32 cd = c * d;
    const float32 err = ::fmaf(-c, d, cd);
    return ::fmaf(a, b, -cd) + err;
}

WEFT_FN float32 clamp01(float32 x) {
    return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}

// The gradient a clamp to [0, 1] passes through (x == 0 passes, x == 1 does not, as weft's clamp).
WEFT_FN float32 clamp01_grad(float32 x, float32 g) {
    return (x >= 0.0f && x < 1.0f) ? g : 0.0f;
}

// Which formula produced (s, t): the forward's branches, plus the damped twin of the general one.
enum EdgeEdgeCase { EE_POINTS, EE_POINT1, EE_POINT2, EE_GENERAL, EE_NEAR_PARALLEL, EE_T0, EE_T1 };

// The forward pass with everything the adjoint needs. The scalars are those of Ericson's
// derivation: d1 = q1 - p1, d2 = q2 - p2, r = p1 - p2, a = d1.d1, e = d2.d2, b = d1.d2, c = d1.r,
// f = d2.r; s_free / t_free are s and t before their final clamp; denom = a e - b^2.
struct EdgeEdge {
    float32 d1[3], d2[3], r[3];
    float32 a, b, c, e, f, denom;
    float32 s, t, s_free, t_free;
    EdgeEdgeCase kind;
};

WEFT_FN void edge_edge_solve(const float32* p1, const float32* q1, const float32* p2, const float32* q2,
                             float32 epsilon, EdgeEdge& x) {
    sub3(q1, p1, x.d1);
    sub3(q2, p2, x.d2);
    sub3(p1, p2, x.r);
    x.a = dot3(x.d1, x.d1);
    x.e = dot3(x.d2, x.d2);
    x.f = dot3(x.d2, x.r);
    x.b = x.c = x.denom = x.s = x.t = x.s_free = x.t_free = 0.0f;
    const bool point1 = x.a <= epsilon;
    const bool point2 = x.e <= epsilon;
    if (point1 && point2) {
        x.kind = EE_POINTS;
        return;
    }
    if (point1) {  // project p1 onto edge 2
        x.kind = EE_POINT1;
        x.t_free = x.f / x.e;
        x.t = clamp01(x.t_free);
        return;
    }
    x.c = dot3(x.d1, x.r);
    if (point2) {  // project p2 onto edge 1
        x.kind = EE_POINT2;
        x.s_free = -x.c / x.a;
        x.s = clamp01(x.s_free);
        return;
    }
    x.b = dot3(x.d1, x.d2);
    x.denom = diff_of_products(x.a, x.e, x.b, x.b);
    float32 s0 = 0.0f;  // parallel lines: any s is as close; start from p1
    if (x.denom > 0.0f) {
        x.s_free = diff_of_products(x.b, x.f, x.c, x.e) / x.denom;
        s0 = clamp01(x.s_free);
    }
    const float32 t0 = (x.b * s0 + x.f) / x.e;
    if (t0 < 0.0f) {
        x.kind = EE_T0;
        x.s_free = -x.c / x.a;
        x.s = clamp01(x.s_free);
    } else if (t0 > 1.0f) {
        x.kind = EE_T1;
        x.s_free = (x.b - x.c) / x.a;
        x.s = clamp01(x.s_free);
        x.t = 1.0f;
    } else {
        // 1/denom amplifies rounding noise when the edges are within ~1e-3 rad of parallel
        x.kind = x.denom > 1.0e-6f * x.a * x.e ? EE_GENERAL : EE_NEAR_PARALLEL;
        x.s = s0;
        x.t = t0;
    }
}

}  // namespace intersect_detail

WEFT_FN vec_t<3, float32> closest_point_edge_edge(const vec_t<3, float32>& p1, const vec_t<3, float32>& q1,
                                                  const vec_t<3, float32>& p2, const vec_t<3, float32>& q2,
                                                  float32 epsilon) {
    using namespace intersect_detail;
    EdgeEdge x;
    edge_edge_solve(p1.c, q1.c, p2.c, q2.c, epsilon, x);
    float32 gap[3];
    for (int k = 0; k < 3; ++k) gap[k] = (p2.c[k] + x.t * x.d2[k]) - (p1.c[k] + x.s * x.d1[k]);
    vec_t<3, float32> out;
    out.c[0] = x.s;
    out.c[1] = x.t;
    out.c[2] = fmath::sqrt(dot3(gap, gap));
    return out;
}

WEFT_FN void adj_closest_point_edge_edge(const vec_t<3, float32>& p1, const vec_t<3, float32>& q1,
                                         const vec_t<3, float32>& p2, const vec_t<3, float32>& q2, float32 epsilon,
                                         vec_t<3, float32>& adj_p1, vec_t<3, float32>& adj_q1,
                                         vec_t<3, float32>& adj_p2, vec_t<3, float32>& adj_q2, float32& adj_epsilon,
                                         const vec_t<3, float32>& adj_ret) {
    using namespace intersect_detail;
    (void)adj_epsilon;  // a tolerance: no gradient
    EdgeEdge x;
    edge_edge_solve(p1.c, q1.c, p2.c, q2.c, epsilon, x);

    // dist = |gap|, gap = (p2 + t d2) - (p1 + s d1)
    float32 gap[3];
    for (int k = 0; k < 3; ++k) gap[k] = (p2.c[k] + x.t * x.d2[k]) - (p1.c[k] + x.s * x.d1[k]);
    const float32 dist = fmath::sqrt(dot3(gap, gap));
    float32 g_gap[3] = {0.0f, 0.0f, 0.0f};
    if (dist > 0.0f)
        for (int k = 0; k < 3; ++k) g_gap[k] = adj_ret.c[2] * gap[k] / dist;
    float32 g_d1[3], g_d2[3], g_r[3] = {0.0f, 0.0f, 0.0f};
    for (int k = 0; k < 3; ++k) {
        g_d1[k] = -x.s * g_gap[k];
        g_d2[k] = x.t * g_gap[k];
    }
    float32 g_s = adj_ret.c[0] - dot3(x.d1, g_gap);
    float32 g_t = adj_ret.c[1] + dot3(x.d2, g_gap);

    // (s, t) through the formula of the branch taken, onto the scalars a, b, c, e, f
    float32 g_a = 0.0f, g_b = 0.0f, g_c = 0.0f, g_e = 0.0f, g_f = 0.0f;
    switch (x.kind) {
        case EE_POINTS:
            break;
        case EE_POINT1: {  // t = clamp(f / e)
            const float32 g = clamp01_grad(x.t_free, g_t);
            g_f += g / x.e;
            g_e -= g * x.t_free / x.e;
            break;
        }
        case EE_POINT2:
        case EE_T0:
        case EE_T1: {  // s = clamp(-c / a) or clamp((b - c) / a); t constant
            const float32 g = clamp01_grad(x.s_free, g_s);
            if (x.kind == EE_T1) g_b += g / x.a;
            g_c -= g / x.a;
            g_a -= g * x.s_free / x.a;
            break;
        }
        case EE_GENERAL:
        case EE_NEAR_PARALLEL: {  // t = (b s + f) / e, s = clamp((b f - c e) / (a e - b^2))
            g_b += g_t * x.s / x.e;
            g_f += g_t / x.e;
            g_e -= g_t * x.t / x.e;
            if (x.kind == EE_NEAR_PARALLEL) break;  // s held constant: see the header comment
            g_s += g_t * x.b / x.e;
            const float32 g = clamp01_grad(x.s_free, g_s);
            const float32 g_num = g / x.denom;
            const float32 g_denom = -g * x.s_free / x.denom;
            g_b += g_num * x.f - 2.0f * g_denom * x.b;
            g_f += g_num * x.b;
            g_c -= g_num * x.e;
            g_e += g_denom * x.a - g_num * x.c;
            g_a += g_denom * x.e;
            break;
        }
    }

    // a = d1.d1, e = d2.d2, b = d1.d2, c = d1.r, f = d2.r
    for (int k = 0; k < 3; ++k) {
        g_d1[k] += 2.0f * g_a * x.d1[k] + g_b * x.d2[k] + g_c * x.r[k];
        g_d2[k] += 2.0f * g_e * x.d2[k] + g_b * x.d1[k] + g_f * x.r[k];
        g_r[k] += g_c * x.d1[k] + g_f * x.d2[k];
    }
    // d1 = q1 - p1, d2 = q2 - p2, r = p1 - p2, and gap's direct dependence on p1, p2
    for (int k = 0; k < 3; ++k) {
        adj_p1.c[k] += -g_gap[k] - g_d1[k] + g_r[k];
        adj_q1.c[k] += g_d1[k];
        adj_p2.c[k] += g_gap[k] - g_d2[k] - g_r[k];
        adj_q2.c[k] += g_d2[k];
    }
}

}  // namespace weft
