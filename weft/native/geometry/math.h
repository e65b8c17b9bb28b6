// Small float32 3-vector arithmetic for the geometry queries (bvh.h, mesh.h, hashgrid.h):
// a plain struct with operators, converted to and from weft::vec_t<3, float32> at the builtin
// boundary, and the triangle primitives the queries share (closest point with barycentrics,
// watertight ray-triangle intersection, solid angle, ray-box slab test).
//
// Barycentric convention (Warp's): a point on triangle (A, B, C) is u*A + v*B + (1-u-v)*C.
#pragma once
#include "../core.h"
#include "../vec_types.h"

namespace weft {
namespace geo {

struct v3 {
    float32 x, y, z;
};

// min / max as plain comparisons: one instruction each (fminf / fmaxf are library calls under
// the kernels' IEEE flags, for NaN rules the queries never need).
WEFT_FN float32 fmin_(float32 a, float32 b) { return a < b ? a : b; }
WEFT_FN float32 fmax_(float32 a, float32 b) { return a > b ? a : b; }

WEFT_FN v3 make(float32 x, float32 y, float32 z) { return v3{x, y, z}; }
WEFT_FN v3 from(const vec_t<3, float32>& a) { return v3{a.c[0], a.c[1], a.c[2]}; }
WEFT_FN vec_t<3, float32> to_vec(const v3& a) {
    vec_t<3, float32> r;
    r.c[0] = a.x;
    r.c[1] = a.y;
    r.c[2] = a.z;
    return r;
}
WEFT_FN v3 operator+(const v3& a, const v3& b) { return v3{a.x + b.x, a.y + b.y, a.z + b.z}; }
WEFT_FN v3 operator-(const v3& a, const v3& b) { return v3{a.x - b.x, a.y - b.y, a.z - b.z}; }
WEFT_FN v3 operator-(const v3& a) { return v3{-a.x, -a.y, -a.z}; }
WEFT_FN v3 operator*(const v3& a, float32 s) { return v3{a.x * s, a.y * s, a.z * s}; }
WEFT_FN v3 operator*(float32 s, const v3& a) { return v3{a.x * s, a.y * s, a.z * s}; }
WEFT_FN v3& operator+=(v3& a, const v3& b) {
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    return a;
}
WEFT_FN float32 dot(const v3& a, const v3& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
WEFT_FN v3 cross(const v3& a, const v3& b) {
    return v3{a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
WEFT_FN float32 length_sq(const v3& a) { return dot(a, a); }
WEFT_FN float32 length(const v3& a) { return sqrtf(dot(a, a)); }
WEFT_FN v3 normalized(const v3& a) {
    float32 l = length(a);
    return l > 0.0f ? a * (1.0f / l) : v3{0.0f, 0.0f, 0.0f};
}
WEFT_FN v3 vmin(const v3& a, const v3& b) { return v3{fmin_(a.x, b.x), fmin_(a.y, b.y), fmin_(a.z, b.z)}; }
WEFT_FN v3 vmax(const v3& a, const v3& b) { return v3{fmax_(a.x, b.x), fmax_(a.y, b.y), fmax_(a.z, b.z)}; }
WEFT_FN float32 comp(const v3& a, int i) { return i == 0 ? a.x : i == 1 ? a.y : a.z; }

// Squared distance from p to the box [lo, hi] (0 inside).
WEFT_FN float32 box_distance_sq(const v3& p, const v3& lo, const v3& hi) {
    float32 dx = fmax_(fmax_(lo.x - p.x, 0.0f), p.x - hi.x);
    float32 dy = fmax_(fmax_(lo.y - p.y, 0.0f), p.y - hi.y);
    float32 dz = fmax_(fmax_(lo.z - p.z, 0.0f), p.z - hi.z);
    return dx * dx + dy * dy + dz * dz;
}

// Squared distance from p to the farthest corner of the box [lo, hi].
WEFT_FN float32 box_far_distance_sq(const v3& p, const v3& lo, const v3& hi) {
    float32 dx = fmax_(fabsf(p.x - lo.x), fabsf(p.x - hi.x));
    float32 dy = fmax_(fabsf(p.y - lo.y), fabsf(p.y - hi.y));
    float32 dz = fmax_(fabsf(p.z - lo.z), fabsf(p.z - hi.z));
    return dx * dx + dy * dy + dz * dz;
}

WEFT_FN bool boxes_overlap(const v3& alo, const v3& ahi, const v3& blo, const v3& bhi) {
    return !(alo.x > bhi.x || alo.y > bhi.y || alo.z > bhi.z || ahi.x < blo.x || ahi.y < blo.y || ahi.z < blo.z);
}

// Ray (start + t dir) against the box [lo, hi]: the entry parameter in *t_enter (clamped to >= 0)
// when the ray meets the box at some t in [0, max_t]. A zero direction component tests the slab
// as an interval on the start coordinate, so rays parallel to a face never divide 0 by 0.
WEFT_FN bool ray_box(const v3& start, const v3& dir, const v3& lo, const v3& hi, float32 max_t, float32* t_enter) {
    float32 t0 = 0.0f, t1 = max_t;
    for (int k = 0; k < 3; ++k) {
        float32 o = comp(start, k), d = comp(dir, k), l = comp(lo, k), h = comp(hi, k);
        if (d == 0.0f) {
            if (o < l || o > h) return false;
            continue;
        }
        float32 inv = 1.0f / d;
        float32 ta = (l - o) * inv, tb = (h - o) * inv;
        if (ta > tb) {
            float32 s = ta;
            ta = tb;
            tb = s;
        }
        t0 = fmax_(t0, ta);
        t1 = fmin_(t1, tb);
        if (t0 > t1) return false;
    }
    *t_enter = t0;
    return true;
}

// A ray prepared once for many box and triangle tests: reciprocal direction (with the axes it
// is parallel to flagged, so no 0 * inf appears) and the shear of the watertight triangle test.
struct ray_t {
    v3 start, dir, inv;
    bool parallel[3];
    bool any_parallel;
    int kx, ky, kz;
    float32 sx, sy, sz;
    bool valid;  // a zero direction meets nothing
};

WEFT_FN ray_t make_ray(const v3& start, const v3& dir) {
    ray_t r;
    r.start = start;
    r.dir = dir;
    for (int k = 0; k < 3; ++k) r.parallel[k] = comp(dir, k) == 0.0f;
    r.inv = v3{r.parallel[0] ? 0.0f : 1.0f / dir.x, r.parallel[1] ? 0.0f : 1.0f / dir.y, r.parallel[2] ? 0.0f : 1.0f / dir.z};
    r.any_parallel = r.parallel[0] || r.parallel[1] || r.parallel[2];
    float32 ax = fabsf(dir.x), ay = fabsf(dir.y), az = fabsf(dir.z);
    r.kz = ax > ay ? (ax > az ? 0 : 2) : (ay > az ? 1 : 2);
    r.kx = r.kz == 2 ? 0 : r.kz + 1;
    r.ky = r.kx == 2 ? 0 : r.kx + 1;
    if (comp(dir, r.kz) < 0.0f) {
        int t = r.kx;
        r.kx = r.ky;
        r.ky = t;
    }
    float32 dz = comp(dir, r.kz);
    r.valid = dz != 0.0f;
    r.sx = r.valid ? comp(dir, r.kx) / dz : 0.0f;
    r.sy = r.valid ? comp(dir, r.ky) / dz : 0.0f;
    r.sz = r.valid ? 1.0f / dz : 0.0f;
    return r;
}

// The prepared ray against the box [lo, hi] for t in [0, max_t]; *t_enter as in ray_box.
WEFT_FN bool ray_box(const ray_t& r, const v3& lo, const v3& hi, float32 max_t, float32* t_enter) {
    if (!r.any_parallel) {  // the usual case, branch-free
        float32 ax = (lo.x - r.start.x) * r.inv.x, bx = (hi.x - r.start.x) * r.inv.x;
        float32 ay = (lo.y - r.start.y) * r.inv.y, by = (hi.y - r.start.y) * r.inv.y;
        float32 az = (lo.z - r.start.z) * r.inv.z, bz = (hi.z - r.start.z) * r.inv.z;
        float32 t0 = fmax_(fmax_(fmin_(ax, bx), fmin_(ay, by)), fmax_(fmin_(az, bz), 0.0f));
        float32 t1 = fmin_(fmin_(fmax_(ax, bx), fmax_(ay, by)), fmin_(fmax_(az, bz), max_t));
        *t_enter = t0;
        // (b - o) * inv rounds three times (difference, reciprocal, product): each slab bound is
        // within gamma(3) of the exact one, so t1 * (1 + 2 gamma(3)) keeps every box the exact ray
        // meets (Ize 2013; PBRT 6.1.2). Without it a ray through the shared side of two flat boxes
        // (the bounds of coplanar faces) rounds out of both and leaks through the mesh; the earlier
        // form lo * inv - start * inv (one fma) has no relative bound when |start| >> |lo - start|.
        return t0 <= t1 * 1.00000036f;
    }
    float32 t0 = 0.0f, t1 = max_t;
    for (int k = 0; k < 3; ++k) {
        float32 o = comp(r.start, k), l = comp(lo, k), h = comp(hi, k);
        if (r.parallel[k]) {
            if (o < l || o > h) return false;
            continue;
        }
        float32 inv = comp(r.inv, k);
        float32 ta = (l - o) * inv, tb = (h - o) * inv;
        t0 = fmax_(t0, fmin_(ta, tb));
        t1 = fmin_(t1, fmax_(ta, tb));
    }
    *t_enter = t0;
    return t0 <= t1 * 1.00000036f;  // as above
}

// The point of triangle (a, b, c) closest to p, as barycentrics (u, v) of a and b (the weight of c
// is 1 - u - v); region: 0 interior, 1 edge ab, 2 edge bc, 3 edge ca, 4-6 vertices a, b, c.
// Ericson, Real-Time Collision Detection, 5.1.5, written for this convention.
WEFT_FN void closest_point_triangle(const v3& a, const v3& b, const v3& c, const v3& p, float32* u, float32* v, int* region) {
    v3 ab = b - a, ac = c - a, ap = p - a;
    float32 d1 = dot(ab, ap), d2 = dot(ac, ap);
    if (d1 <= 0.0f && d2 <= 0.0f) {
        *u = 1.0f, *v = 0.0f, *region = 4;
        return;
    }
    v3 bp = p - b;
    float32 d3 = dot(ab, bp), d4 = dot(ac, bp);
    if (d3 >= 0.0f && d4 <= d3) {
        *u = 0.0f, *v = 1.0f, *region = 5;
        return;
    }
    float32 vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
        float32 s = d1 / (d1 - d3);  // a + s ab
        *u = 1.0f - s, *v = s, *region = 1;
        return;
    }
    v3 cp = p - c;
    float32 d5 = dot(ab, cp), d6 = dot(ac, cp);
    if (d6 >= 0.0f && d5 <= d6) {
        *u = 0.0f, *v = 0.0f, *region = 6;
        return;
    }
    float32 vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
        float32 s = d2 / (d2 - d6);  // a + s ac
        *u = 1.0f - s, *v = 0.0f, *region = 3;
        return;
    }
    float32 va = d3 * d6 - d5 * d4;
    if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {
        float32 s = (d4 - d3) / ((d4 - d3) + (d5 - d6));  // b + s (c - b)
        *u = 0.0f, *v = 1.0f - s, *region = 2;
        return;
    }
    float32 denom = 1.0f / (va + vb + vc);
    float32 wb = vb * denom, wc = vc * denom;  // weights of b... in Ericson's a + ab*wb + ac*wc
    *u = 1.0f - wb - wc, *v = wb, *region = 0;
}

// Gradient of the barycentrics (u, v) that closest_point_triangle returns for p, accumulated
// as adj_p += adj_u du/dp + adj_v dv/dp (zero at vertices, along the edge on edges).
WEFT_FN void adj_closest_point_triangle(const v3& a, const v3& b, const v3& c, int region, float32 adj_u, float32 adj_v, v3& adj_p) {
    if (region == 0) {
        // q = c + u (a - c) + v (b - c): normal equations of the projection onto the plane
        v3 e0 = a - c, e1 = b - c;
        float32 m00 = dot(e0, e0), m01 = dot(e0, e1), m11 = dot(e1, e1);
        float32 det = m00 * m11 - m01 * m01;
        if (det == 0.0f) return;
        float32 i00 = m11 / det, i01 = -m01 / det, i11 = m00 / det;
        v3 du = e0 * i00 + e1 * i01, dv = e0 * i01 + e1 * i11;
        adj_p += du * adj_u + dv * adj_v;
        return;
    }
    if (region > 3) return;
    v3 x = region == 1 ? a : region == 2 ? b : c;  // the edge x + s (y - x)
    v3 y = region == 1 ? b : region == 2 ? c : a;
    v3 e = y - x;
    float32 l2 = dot(e, e);
    if (l2 == 0.0f) return;
    v3 ds = e * (1.0f / l2);
    // ab: u = 1 - s, v = s; bc: u = 0, v = 1 - s; ca (c + s (a - c)): u = s, v = 0
    float32 adj_s = region == 1 ? adj_v - adj_u : region == 2 ? -adj_v : adj_u;
    adj_p += ds * adj_s;
}

// Whether a triangle is too thin to have a meaningful closest point (its doubled area is tiny
// next to its longest edge squared); such faces are skipped by the point queries.
WEFT_FN bool triangle_degenerate(const v3& a, const v3& b, const v3& c) {
    v3 e0 = b - a, e1 = c - a, e2 = c - b;
    float32 longest = fmax_(dot(e0, e0), fmax_(dot(e1, e1), dot(e2, e2)));
    return length(cross(e0, e1)) <= 1.0e-6f * longest;
}

// Watertight ray-triangle intersection (Woop, Benthin, Wald 2013), for a prepared ray: a ray through a shared edge
// or vertex hits at least one of the triangles. On a hit with t in [t_min, t_max] returns true
// with t, the barycentrics (u, v) of a and b, and the sign of det (> 0: the ray meets the side
// the face's normal cross(b - a, c - a) points away from, i.e. the front).
WEFT_FN bool ray_triangle(const ray_t& r, const v3& a, const v3& b, const v3& c, float32 t_min, float32 t_max, float32* t, float32* u,
                          float32* v, float32* sign) {
    if (!r.valid) return false;
    const v3& start = r.start;
    const v3& dir = r.dir;
    int kx = r.kx, ky = r.ky, kz = r.kz;
    float32 sx = r.sx, sy = r.sy, sz = r.sz;
    v3 pa = a - start, pb = b - start, pc = c - start;
    float32 ax_ = comp(pa, kx) - sx * comp(pa, kz), ay_ = comp(pa, ky) - sy * comp(pa, kz);
    float32 bx_ = comp(pb, kx) - sx * comp(pb, kz), by_ = comp(pb, ky) - sy * comp(pb, kz);
    float32 cx_ = comp(pc, kx) - sx * comp(pc, kz), cy_ = comp(pc, ky) - sy * comp(pc, kz);
    // Edge functions in double: the products of floats are exact there, so a face sharing an edge
    // computes exactly the negation of its neighbour's value (no fused multiply-add asymmetry) and
    // a ray through the edge meets at least one of them. Edges count as inside (a ray exactly
    // through an edge shared by two faces hits both; one on an open boundary edge still hits).
    double du = double(cx_) * double(by_) - double(cy_) * double(bx_);
    double dv = double(ax_) * double(cy_) - double(ay_) * double(cx_);
    double dw = double(bx_) * double(ay_) - double(by_) * double(ax_);
    if ((du < 0.0 || dv < 0.0 || dw < 0.0) && (du > 0.0 || dv > 0.0 || dw > 0.0)) return false;
    double ddet = du + dv + dw;
    if (ddet == 0.0) return false;
    float32 U = float32(du), V = float32(dv), W = float32(dw), det = float32(ddet);
    float32 az_ = sz * comp(pa, kz), bz_ = sz * comp(pb, kz), cz_ = sz * comp(pc, kz);
    float32 T = U * az_ + V * bz_ + W * cz_;
    float32 inv = 1.0f / det;
    float32 tt = T * inv;
    if (!(tt >= t_min && tt <= t_max)) return false;
    *t = tt;
    *u = U * inv;  // U weighs a
    *v = V * inv;  // V weighs b
    // the winding seen along the ray: det > 0 when the ray meets the back of the face in the
    // permuted frame; compare with the geometric normal instead (robust to the permutation)
    *sign = dot(cross(b - a, c - a), dir) < 0.0f ? 1.0f : -1.0f;
    return true;
}

// Signed solid angle of triangle (a, b, c) seen from p (Van Oosterom and Strackee), positive when
// p is on the side opposite the face normal cross(b - a, c - a).
WEFT_FN float32 solid_angle(const v3& a, const v3& b, const v3& c, const v3& p) {
    v3 x = a - p, y = b - p, z = c - p;
    float32 lx = length(x), ly = length(y), lz = length(z);
    float32 num = dot(x, cross(y, z));
    float32 den = lx * ly * lz + dot(x, y) * lz + dot(x, z) * ly + dot(y, z) * lx;
    return 2.0f * atan2f(num, den);
}

}  // namespace geo
}  // namespace weft
