// Triangle meshes in kernels: the layout weft.geometry.Mesh builds and Warp's mesh queries over
// it: closest / furthest point (with four ways to tell inside from outside), rays (closest hit,
// any hit, hit count), AABB and sphere iteration, evaluation on faces, with the adjoints Warp has
// (closest-point barycentrics and ray hits with respect to the query, positions with respect to
// barycentrics and vertices).
//
// A mesh's id is the address of its mesh_t; its first member is the triangles' BVH, so the same
// id is also a BVH id (wp.mesh_get_bvh) whose items are faces.
#pragma once
#include "bvh.h"

namespace weft {

struct mesh_t {
    bvh_t bvh;  // items: faces; item bounds: the triangles' bounds
    array_t<vec_t<3, float32>> points;
    array_t<vec_t<3, float32>> velocities;
    array_t<int32> indices;
    vec_t<3, float32>* wn_centers;  // per node, for the fast winding number (null without support)
    vec_t<3, float32>* wn_normals;  // area-weighted normal sums
    float32* wn_radii;
    int32 num_points;
    int32 num_tris;
    float32 avg_edge_length;
    int32 pad;
};

// wp.MeshQueryPoint, wp.MeshQueryRay and the struct wp.mesh_get returns (fields as weft structs name them).
struct mesh_query_point_t {
    bool f_result;
    float32 f_sign;
    int32 f_face;
    float32 f_u;
    float32 f_v;
};
struct mesh_query_ray_t {
    bool f_result;
    float32 f_sign;
    int32 f_face;
    float32 f_t;
    float32 f_u;
    float32 f_v;
    vec_t<3, float32> f_normal;
};
struct mesh_view_t {
    array_t<vec_t<3, float32>> f_points;
    array_t<vec_t<3, float32>> f_velocities;
    array_t<int32> f_indices;
};
typedef bvh_query_t mesh_query_aabb_t;

WEFT_FN mesh_query_point_t& operator+=(mesh_query_point_t& a, const mesh_query_point_t& b) {
    a.f_sign += b.f_sign;
    a.f_u += b.f_u;
    a.f_v += b.f_v;
    return a;
}
WEFT_FN mesh_query_ray_t& operator+=(mesh_query_ray_t& a, const mesh_query_ray_t& b) {
    a.f_sign += b.f_sign;
    a.f_t += b.f_t;
    a.f_u += b.f_u;
    a.f_v += b.f_v;
    a.f_normal += b.f_normal;
    return a;
}
WEFT_FN mesh_view_t& operator+=(mesh_view_t& a, const mesh_view_t&) { return a; }
template <typename C, typename S>
WEFT_FN void adj_where_struct(C cond, S& adj_a, S& adj_b, const S& adj_ret) {
    if (truth(cond))
        adj_a += adj_ret;
    else
        adj_b += adj_ret;
}
#define WEFT_MESH_SELECT_ADJOINTS(S)                                                                  \
    template <typename C>                                                                             \
    WEFT_FN void adj_where(C cond, const S&, const S&, C&, S& adj_a, S& adj_b, const S& adj_ret) {    \
        adj_where_struct(cond, adj_a, adj_b, adj_ret);                                                \
    }                                                                                                 \
    template <typename C>                                                                             \
    WEFT_FN void adj_select(C cond, const S&, const S&, C&, S& adj_a, S& adj_b, const S& adj_ret) {   \
        adj_where_struct(cond, adj_b, adj_a, adj_ret);                                                \
    }
WEFT_MESH_SELECT_ADJOINTS(mesh_query_point_t)
WEFT_MESH_SELECT_ADJOINTS(mesh_query_ray_t)
WEFT_MESH_SELECT_ADJOINTS(mesh_view_t)

// Push an inner node's children (left on top) when the stack has room (build.cpp keeps trees
// shallower than the stack).
WEFT_FN void push_children(const bvh_node_t& n, int32* stack, int32& count) {
    if (count + 2 <= WEFT_BVH_STACK) {
        stack[count++] = n.b;
        stack[count++] = n.a;
    }
}

WEFT_FN const mesh_t* mesh_of(uint64 id) { return reinterpret_cast<const mesh_t*>(id); }

WEFT_FN void mesh_face(const mesh_t* m, int32 face, geo::v3& a, geo::v3& b, geo::v3& c) {
    const int32* idx = m->indices.data + 3 * face;
    a = geo::from(m->points.data[idx[0]]);
    b = geo::from(m->points.data[idx[1]]);
    c = geo::from(m->points.data[idx[2]]);
}

// ------------------------------------------------------------------------------ closest points

// Closest face strictly within max_dist (degenerate faces skipped): face, barycentrics, region.
WEFT_FN bool mesh_closest(const mesh_t* m, const geo::v3& p, float32 max_dist, int32 root, int32& face, float32& u, float32& v,
                          int32& region, float32& dist_sq) {
    const bvh_t& bvh = m->bvh;
    float32 best = max_dist < 3.0e19f ? max_dist * max_dist : INFINITY;
    bool found = false;
    int32 stack[WEFT_BVH_STACK];
    int32 count = 0;
    int32 start = bvh_start_node(&bvh, root);
    if (start >= 0) stack[count++] = start;
    while (count) {
        const bvh_node_t& n = bvh.nodes[stack[--count]];
        if (!(geo::box_distance_sq(p, node_lo(n), node_hi(n)) < best)) continue;
        if (n.b < 0) {
            for (int32 k = n.a; k < n.a - n.b; ++k) {
                int32 f = bvh.prims[k];
                geo::v3 a, b, c;
                mesh_face(m, f, a, b, c);
                if (geo::triangle_degenerate(a, b, c)) continue;
                float32 fu, fv;
                int32 reg;
                geo::closest_point_triangle(a, b, c, p, &fu, &fv, &reg);
                geo::v3 q = a * fu + b * fv + c * (1.0f - fu - fv);
                float32 d2 = geo::length_sq(q - p);
                if (d2 < best) {
                    best = d2, face = f, u = fu, v = fv, region = reg, found = true;
                }
            }
            continue;
        }
        // visit the nearer child first
        float32 da = geo::box_distance_sq(p, node_lo(bvh.nodes[n.a]), node_hi(bvh.nodes[n.a]));
        float32 db = geo::box_distance_sq(p, node_lo(bvh.nodes[n.b]), node_hi(bvh.nodes[n.b]));
        if (count + 2 > WEFT_BVH_STACK) continue;
        if (da <= db) {
            stack[count++] = n.b;
            stack[count++] = n.a;
        } else {
            stack[count++] = n.a;
            stack[count++] = n.b;
        }
    }
    dist_sq = best;
    return found;
}

// Whether a hit at ft on face f beats the best so far (best, face): nearer, or as near on a lower
// face index, so the reported face does not depend on the order the tree is walked in.
WEFT_FN bool mesh_ray_better(bool found, float32 ft, int32 f, float32 best, int32 face) {
    return !found || ft < best || (ft == best && f < face);
}
// The t up to which boxes are still walked once a hit at `best` is known: a few ulps past it. A
// face tying with the best hit (a ray through a shared vertex or edge) may lie in a box whose
// computed entry is a few ulps beyond its own computed t (the triangle test rounds differently
// from the slabs); pruning at `best` exactly dropped it on one traversal and not on another, so
// the lowest-index rule for ties gave other faces on the wide and the binary tree.
WEFT_FN float32 mesh_ray_prune(float32 best) { return best * 1.000002f; }

// ------------------------------------------------------------------- rays on the 4-wide tree
// CPU only (the tree exists only for meshes on the CPU): a ray tests a wide node's four boxes at
// once and the leaves it meets in order of entry. Same boxes, same slab arithmetic, same
// triangle test as the binary traversal, so the same hits.
#ifndef WEFT_CUDA
#define WEFT_BVH4_STACK (3 * WEFT_BVH_STACK)  // at most three pending slots a level

// The corners of the face in leaf slot k (prims[k]), from the faces in leaf order.
inline void mesh_leaf_face(const mesh_t* m, int32 k, geo::v3& a, geo::v3& b, geo::v3& c) {
    const int32* idx = m->bvh.leaf_tris + 3 * k;
    a = geo::from(m->points.data[idx[0]]);
    b = geo::from(m->points.data[idx[1]]);
    c = geo::from(m->points.data[idx[2]]);
}

// A prepared ray broadcast to four lanes.
struct ray4_t {
#ifdef WEFT_BVH4_SIMD
    __m128 start[3], inv[3];
#endif
    const geo::ray_t* ray;
};

inline ray4_t make_ray4(const geo::ray_t& r) {
    ray4_t q;
#ifdef WEFT_BVH4_SIMD
    for (int k = 0; k < 3; ++k) {
        q.start[k] = _mm_set1_ps(geo::comp(r.start, k));
        q.inv[k] = _mm_set1_ps(geo::comp(r.inv, k));
    }
#endif
    q.ray = &r;
    return q;
}

// The slots of n the ray meets at t in [0, max_t] (bit k: slot k) and their entry t: geo::ray_box
// lane by lane (the same operations, so the same roundings; an axis the ray is parallel to tests
// the start against the slab and bounds no t).
inline int bvh4_ray_hits(const bvh4_node_t& n, const ray4_t& q, float32 max_t, float32* t_enter) {
#ifdef WEFT_BVH4_SIMD
    __m128 a[3], b[3];
    for (int k = 0; k < 3; ++k) {
        a[k] = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(n.lo[k]), q.start[k]), q.inv[k]);
        b[k] = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(n.hi[k]), q.start[k]), q.inv[k]);
    }
    __m128i count = _mm_load_si128(reinterpret_cast<const __m128i*>(n.count));
    __m128 live = _mm_castsi128_ps(_mm_cmpgt_epi32(count, _mm_set1_epi32(-1)));
    if (q.ray->any_parallel) {
        for (int k = 0; k < 3; ++k) {
            if (!q.ray->parallel[k]) continue;
            __m128 inside = _mm_and_ps(_mm_cmpnlt_ps(q.start[k], _mm_load_ps(n.lo[k])), _mm_cmpngt_ps(q.start[k], _mm_load_ps(n.hi[k])));
            live = _mm_and_ps(live, inside);
            a[k] = _mm_set1_ps(-INFINITY);
            b[k] = _mm_set1_ps(INFINITY);
        }
    }
    __m128 t0 = _mm_max_ps(_mm_max_ps(_mm_min_ps(a[0], b[0]), _mm_min_ps(a[1], b[1])),
                           _mm_max_ps(_mm_min_ps(a[2], b[2]), _mm_setzero_ps()));
    __m128 t1 = _mm_min_ps(_mm_min_ps(_mm_max_ps(a[0], b[0]), _mm_max_ps(a[1], b[1])),
                           _mm_min_ps(_mm_max_ps(a[2], b[2]), _mm_set1_ps(max_t)));
    __m128 hit = _mm_cmple_ps(t0, _mm_mul_ps(t1, _mm_set1_ps(1.00000036f)));
    _mm_storeu_ps(t_enter, t0);
    return _mm_movemask_ps(_mm_and_ps(hit, live));
#else
    int mask = 0;
    for (int k = 0; k < 4; ++k) {
        if (n.count[k] < 0) continue;
        geo::v3 lo{n.lo[0][k], n.lo[1][k], n.lo[2][k]}, hi{n.hi[0][k], n.hi[1][k], n.hi[2][k]};
        if (geo::ray_box(*q.ray, lo, hi, max_t, &t_enter[k])) mask |= 1 << k;
    }
    return mask;
#endif
}

// mesh_ray_closest over the whole tree on the wide nodes.
inline bool mesh_ray_closest_wide(const mesh_t* m, const geo::ray_t& ray, float32 max_t, int32& face, float32& t, float32& u, float32& v,
                                  float32& sign) {
    const bvh_t& bvh = m->bvh;
    ray4_t q = make_ray4(ray);
    float32 best = max_t;
    bool found = false;
    int32 stack[WEFT_BVH4_STACK], stack_items[WEFT_BVH4_STACK];
    float32 stack_t[WEFT_BVH4_STACK];
    int32 count = 0;
    int32 ref = 0, items = 0;  // a wide node (items 0) or a leaf's slots in prims
    for (;;) {
        if (items == 0) {
            const bvh4_node_t& n = bvh.wide[ref];
            float32 te[4];
            int mask = bvh4_ray_hits(n, q, mesh_ray_prune(best), te);
            if (mask) {
                int k0 = __builtin_ctz(mask);
                mask &= mask - 1;
                if (!mask) {  // one slot met (the usual case near the leaves): go on with it
                    ref = n.child[k0];
                    items = n.count[k0];
                    continue;
                }
                int k1 = __builtin_ctz(mask);
                mask &= mask - 1;
                if (!mask && count < WEFT_BVH4_STACK) {  // two: keep the farther for later
                    int near = te[k1] < te[k0] ? k1 : k0, far = k0 + k1 - near;
                    stack[count] = n.child[far];
                    stack_items[count] = n.count[far];
                    stack_t[count++] = te[far];
                    ref = n.child[near];
                    items = n.count[near];
                    continue;
                }
                mask |= (1 << k0) | (1 << k1);
                int32 order[4];  // three or four: the slots met, farthest first
                int h = 0;
                for (; mask; mask &= mask - 1) {
                    int k = __builtin_ctz(mask), j = h++;
                    for (; j > 0 && te[order[j - 1]] < te[k]; --j) order[j] = order[j - 1];
                    order[j] = k;
                }
                for (int j = 0; j + 1 < h && count < WEFT_BVH4_STACK; ++j) {
                    stack[count] = n.child[order[j]];
                    stack_items[count] = n.count[order[j]];
                    stack_t[count++] = te[order[j]];
                }
                ref = n.child[order[h - 1]];
                items = n.count[order[h - 1]];
                continue;
            }
        } else {
            for (int32 k = ref; k < ref + items; ++k) {
                geo::v3 a, b, c;
                mesh_leaf_face(m, k, a, b, c);
                float32 ft, fu, fv, fs;
                if (!geo::ray_triangle(ray, a, b, c, 0.0f, best, &ft, &fu, &fv, &fs)) continue;
                int32 f = bvh.prims[k];
                if (mesh_ray_better(found, ft, f, best, face)) best = ft, face = f, u = fu, v = fv, sign = fs, found = true;
            }
        }
        for (;;) {  // next: the nearest pending slot that can still beat the best hit
            if (count == 0) {
                t = best;
                return found;
            }
            --count;
            if (stack_t[count] <= mesh_ray_prune(best)) break;
        }
        ref = stack[count];
        items = stack_items[count];
    }
}

// mesh_ray_count over the whole tree on the wide nodes.
inline int32 mesh_ray_count_wide(const mesh_t* m, const geo::ray_t& ray, float32 max_t, bool stop_at_first) {
    const bvh_t& bvh = m->bvh;
    ray4_t q = make_ray4(ray);
    int32 hits = 0;
    int32 stack[WEFT_BVH4_STACK], stack_items[WEFT_BVH4_STACK];
    int32 count = 1;
    stack[0] = 0;
    stack_items[0] = 0;
    while (count) {
        --count;
        int32 ref = stack[count], items = stack_items[count];
        if (items == 0) {
            const bvh4_node_t& n = bvh.wide[ref];
            float32 te[4];
            for (int mask = bvh4_ray_hits(n, q, max_t, te); mask && count < WEFT_BVH4_STACK; mask &= mask - 1) {
                int k = __builtin_ctz(mask);
                stack[count] = n.child[k];
                stack_items[count++] = n.count[k];
            }
            continue;
        }
        for (int32 k = ref; k < ref + items; ++k) {
            geo::v3 a, b, c;
            mesh_leaf_face(m, k, a, b, c);
            float32 ft, fu, fv, fs;
            if (geo::ray_triangle(ray, a, b, c, 0.0f, max_t, &ft, &fu, &fv, &fs)) {
                ++hits;
                if (stop_at_first) return hits;
            }
        }
    }
    return hits;
}
#endif

// Closest ray hit with t in [0, max_t]: face, t, barycentrics, front (+1) / back (-1). Nearer
// child first; nodes on the stack keep their entry distance and are dropped once a closer hit
// is known.
WEFT_FN bool mesh_ray_closest(const mesh_t* m, const geo::v3& start, const geo::v3& dir, float32 max_t, int32 root, int32& face,
                              float32& t, float32& u, float32& v, float32& sign) {
    const bvh_t& bvh = m->bvh;
    geo::ray_t ray = geo::make_ray(start, dir);
    float32 best = max_t;
    bool found = false;
    int32 stack[WEFT_BVH_STACK];
    float32 stack_t[WEFT_BVH_STACK];
    int32 count = 0;
    int32 ni = bvh_start_node(&bvh, root);
    float32 te;
#ifndef WEFT_CUDA
    if (bvh.wide && bvh.leaf_tris && ni == bvh.root) return mesh_ray_closest_wide(m, ray, max_t, face, t, u, v, sign);
#endif
    if (ni < 0 || !geo::ray_box(ray, node_lo(bvh.nodes[ni]), node_hi(bvh.nodes[ni]), mesh_ray_prune(best), &te)) return false;
    for (;;) {
        const bvh_node_t& n = bvh.nodes[ni];
        if (n.b < 0) {
            for (int32 k = n.a; k < n.a - n.b; ++k) {
                int32 f = bvh.prims[k];
                geo::v3 a, b, c;
                mesh_face(m, f, a, b, c);
                float32 ft, fu, fv, fs;
                if (geo::ray_triangle(ray, a, b, c, 0.0f, best, &ft, &fu, &fv, &fs) && mesh_ray_better(found, ft, f, best, face)) {
                    best = ft, face = f, u = fu, v = fv, sign = fs, found = true;
                }
            }
        } else {
            float32 ta, tb;
            bool ha = geo::ray_box(ray, node_lo(bvh.nodes[n.a]), node_hi(bvh.nodes[n.a]), mesh_ray_prune(best), &ta);
            bool hb = geo::ray_box(ray, node_lo(bvh.nodes[n.b]), node_hi(bvh.nodes[n.b]), mesh_ray_prune(best), &tb);
            if (ha && hb) {
                bool a_first = ta <= tb;
                if (count < WEFT_BVH_STACK) {
                    stack[count] = a_first ? n.b : n.a;
                    stack_t[count++] = a_first ? tb : ta;
                }
                ni = a_first ? n.a : n.b;
                continue;
            }
            if (ha || hb) {
                ni = ha ? n.a : n.b;
                continue;
            }
        }
        // next: the nearest pending node that can still beat the best hit
        for (;;) {
            if (count == 0) {
                t = best;
                return found;
            }
            --count;
            if (stack_t[count] <= mesh_ray_prune(best)) break;
        }
        ni = stack[count];
    }
}

// Number of faces the ray meets at t in [0, max_t] (stop_at_first: whether any does).
WEFT_FN int32 mesh_ray_count(const mesh_t* m, const geo::v3& start, const geo::v3& dir, float32 max_t, int32 root, bool stop_at_first) {
    const bvh_t& bvh = m->bvh;
    geo::ray_t ray = geo::make_ray(start, dir);
    int32 hits = 0;
    int32 stack[WEFT_BVH_STACK];
    int32 count = 0;
    int32 start_node = bvh_start_node(&bvh, root);
#ifndef WEFT_CUDA
    if (bvh.wide && bvh.leaf_tris && start_node == bvh.root) return mesh_ray_count_wide(m, ray, max_t, stop_at_first);
#endif
    if (start_node >= 0) stack[count++] = start_node;
    while (count) {
        const bvh_node_t& n = bvh.nodes[stack[--count]];
        float32 te;
        if (!geo::ray_box(ray, node_lo(n), node_hi(n), max_t, &te)) continue;
        if (n.b < 0) {
            for (int32 k = n.a; k < n.a - n.b; ++k) {
                geo::v3 a, b, c;
                mesh_face(m, bvh.prims[k], a, b, c);
                float32 ft, fu, fv, fs;
                if (geo::ray_triangle(ray, a, b, c, 0.0f, max_t, &ft, &fu, &fv, &fs)) {
                    ++hits;
                    if (stop_at_first) return hits;
                }
            }
        } else {
            push_children(n, stack, count);
        }
    }
    return hits;
}

// -------------------------------------------------------------------------- inside / outside

// Majority of three axis-aligned rays: a ray whose closest hit is a face's back votes inside.
WEFT_FN float32 mesh_sign_rays(const mesh_t* m, const geo::v3& p) {
    int votes = 0;
    for (int k = 0; k < 3; ++k) {
        geo::v3 dir{k == 0 ? 1.0f : 0.0f, k == 1 ? 1.0f : 0.0f, k == 2 ? 1.0f : 0.0f};
        int32 face;
        float32 t, u, v, s;
        if (mesh_ray_closest(m, p, dir, INFINITY, -1, face, t, u, v, s) && s < 0.0f) ++votes;
    }
    return votes >= 2 ? -1.0f : 1.0f;
}

WEFT_FN float32 mesh_perturbation(uint32 seed) {  // uniform in [-1, 1): a fixed hash, not a stream
    uint32 s = seed * 747796405u + 2891336453u;
    uint32 w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    w = (w >> 22u) ^ w;
    return float32(w >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

// Parity of crossings along n_sample rays around (1, 1, 1): inside when at least half are odd.
WEFT_FN float32 mesh_sign_parity(const mesh_t* m, const geo::v3& p, int32 n_sample, float32 scale) {
    int32 odd = 0;
    for (int32 s = 0; s < n_sample; ++s) {
        geo::v3 dir{1.0f + scale * mesh_perturbation(uint32(3 * s)), 1.0f + scale * mesh_perturbation(uint32(3 * s + 1)),
                    1.0f + scale * mesh_perturbation(uint32(3 * s + 2))};
        if (mesh_ray_count(m, p, dir, INFINITY, -1, false) & 1) ++odd;
    }
    return 2 * odd >= n_sample ? -1.0f : 1.0f;
}

WEFT_FN float32 corner_angle(const geo::v3& at, const geo::v3& x, const geo::v3& y) {
    geo::v3 e0 = geo::normalized(x - at), e1 = geo::normalized(y - at);
    return acosf(geo::fmin_(geo::fmax_(geo::dot(e0, e1), -1.0f), 1.0f));
}

// Angle-weighted pseudo normal at the closest point q (faces within epsilon of it share the
// closest feature: one face, the two faces of an edge, or the fan of a vertex weighted by angle).
WEFT_FN float32 mesh_sign_normal(const mesh_t* m, const geo::v3& p, const geo::v3& q, float32 dist, float32 epsilon) {
    float32 eps = epsilon * m->avg_edge_length;
    float32 reach = dist + eps;
    const bvh_t& bvh = m->bvh;
    geo::v3 normal{0.0f, 0.0f, 0.0f};
    int32 stack[WEFT_BVH_STACK];
    int32 count = 0;
    if (bvh.num_items > 0) stack[count++] = bvh.root;
    while (count) {
        const bvh_node_t& n = bvh.nodes[stack[--count]];
        if (geo::box_distance_sq(p, node_lo(n), node_hi(n)) > reach * reach) continue;
        if (n.b >= 0) {
            push_children(n, stack, count);
            continue;
        }
        for (int32 k = n.a; k < n.a - n.b; ++k) {
            geo::v3 a, b, c;
            mesh_face(m, bvh.prims[k], a, b, c);
            if (geo::triangle_degenerate(a, b, c)) continue;
            float32 fu, fv;
            int32 reg;
            geo::closest_point_triangle(a, b, c, p, &fu, &fv, &reg);
            geo::v3 qf = a * fu + b * fv + c * (1.0f - fu - fv);
            if (geo::length(qf - q) > eps) continue;
            geo::v3 nf = geo::normalized(geo::cross(b - a, c - a));
            float32 w = reg == 4 ? corner_angle(a, b, c) : reg == 5 ? corner_angle(b, c, a) : reg == 6 ? corner_angle(c, a, b) : 1.0f;
            normal += nf * w;
        }
    }
    return geo::dot(p - q, normal) < 0.0f ? -1.0f : 1.0f;
}

// Fast winding number (Barill et al. 2018, first order): far nodes act as dipoles.
WEFT_FN float32 mesh_winding_number(const mesh_t* m, const geo::v3& p, float32 accuracy) {
    const bvh_t& bvh = m->bvh;
    float32 w = 0.0f;
    int32 stack[WEFT_BVH_STACK];
    int32 count = 0;
    if (bvh.num_items > 0) stack[count++] = bvh.root;
    while (count) {
        int32 ni = stack[--count];
        const bvh_node_t& n = bvh.nodes[ni];
        geo::v3 c = geo::from(m->wn_centers[ni]);
        geo::v3 d = c - p;
        float32 r = geo::length(d);
        if (r > accuracy * m->wn_radii[ni]) {
            w += geo::dot(geo::from(m->wn_normals[ni]), d) / (r * r * r);
            continue;
        }
        if (n.b >= 0) {
            push_children(n, stack, count);
            continue;
        }
        for (int32 k = n.a; k < n.a - n.b; ++k) {
            geo::v3 a, b, cc;
            mesh_face(m, bvh.prims[k], a, b, cc);
            w += geo::solid_angle(a, b, cc, p);
        }
    }
    return w * (1.0f / (4.0f * 3.14159265358979f));
}

// ------------------------------------------------------------------------ the point builtins

WEFT_FN mesh_query_point_t mesh_point_result(bool found, float32 sign, int32 face, float32 u, float32 v) {
    mesh_query_point_t r{};
    r.f_result = found;
    r.f_sign = sign;
    r.f_face = face;
    r.f_u = u;
    r.f_v = v;
    return r;
}

// kind: 0 no sign, 1 rays, 2 parity, 3 pseudo normal, 4 winding number
WEFT_FN mesh_query_point_t mesh_query_point_impl(uint64 id, const vec_t<3, float32>& point, float32 max_dist, int kind, float32 x0,
                                                 float32 x1) {
    const mesh_t* m = mesh_of(id);
    geo::v3 p = geo::from(point);
    int32 face = 0, region = 0;
    float32 u = 0.0f, v = 0.0f, d2 = 0.0f;
    if (!mesh_closest(m, p, max_dist, -1, face, u, v, region, d2)) return mesh_point_result(false, 0.0f, 0, 0.0f, 0.0f);
    float32 sign = 0.0f;
    if (kind == 1 || (kind == 4 && !m->wn_centers)) {
        sign = mesh_sign_rays(m, p);
    } else if (kind == 2) {
        sign = mesh_sign_parity(m, p, int32(x0), x1);
    } else if (kind == 3) {
        geo::v3 a, b, c;
        mesh_face(m, face, a, b, c);
        sign = mesh_sign_normal(m, p, a * u + b * v + c * (1.0f - u - v), sqrtf(d2), x0);
    } else if (kind == 4) {
        sign = mesh_winding_number(m, p, x0) >= x1 ? -1.0f : 1.0f;
    }
    return mesh_point_result(true, sign, face, u, v);
}

// The adjoint of every closest-point query: the barycentrics move with the query point.
WEFT_FN void mesh_query_point_adjoint(uint64 id, const vec_t<3, float32>& point, float32 max_dist, vec_t<3, float32>& adj_point,
                                      const mesh_query_point_t& adj_ret) {
    const mesh_t* m = mesh_of(id);
    geo::v3 p = geo::from(point);
    int32 face = 0, region = 0;
    float32 u, v, d2;
    if (!mesh_closest(m, p, max_dist, -1, face, u, v, region, d2)) return;
    geo::v3 a, b, c, g{0.0f, 0.0f, 0.0f};
    mesh_face(m, face, a, b, c);
    geo::adj_closest_point_triangle(a, b, c, region, adj_ret.f_u, adj_ret.f_v, g);
    adj_point.c[0] += g.x;
    adj_point.c[1] += g.y;
    adj_point.c[2] += g.z;
}

WEFT_FN mesh_query_point_t mesh_query_point(uint64 id, const vec_t<3, float32>& point, float32 max_dist) {
    return mesh_query_point_impl(id, point, max_dist, 1, 0.0f, 0.0f);
}
WEFT_FN void adj_mesh_query_point(uint64 id, const vec_t<3, float32>& point, float32 max_dist, uint64&, vec_t<3, float32>& adj_point,
                                  float32&, const mesh_query_point_t& adj_ret) {
    mesh_query_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}
WEFT_FN mesh_query_point_t mesh_query_point_no_sign(uint64 id, const vec_t<3, float32>& point, float32 max_dist) {
    return mesh_query_point_impl(id, point, max_dist, 0, 0.0f, 0.0f);
}
WEFT_FN void adj_mesh_query_point_no_sign(uint64 id, const vec_t<3, float32>& point, float32 max_dist, uint64&,
                                          vec_t<3, float32>& adj_point, float32&, const mesh_query_point_t& adj_ret) {
    mesh_query_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}
WEFT_FN mesh_query_point_t mesh_query_point_sign_parity(uint64 id, const vec_t<3, float32>& point, float32 max_dist, int32 n_sample,
                                                        float32 perturbation_scale) {
    return mesh_query_point_impl(id, point, max_dist, 2, float32(n_sample), perturbation_scale);
}
WEFT_FN void adj_mesh_query_point_sign_parity(uint64 id, const vec_t<3, float32>& point, float32 max_dist, int32, float32, uint64&,
                                              vec_t<3, float32>& adj_point, float32&, int32&, float32&,
                                              const mesh_query_point_t& adj_ret) {
    mesh_query_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}
WEFT_FN mesh_query_point_t mesh_query_point_sign_normal(uint64 id, const vec_t<3, float32>& point, float32 max_dist, float32 epsilon) {
    return mesh_query_point_impl(id, point, max_dist, 3, epsilon, 0.0f);
}
WEFT_FN void adj_mesh_query_point_sign_normal(uint64 id, const vec_t<3, float32>& point, float32 max_dist, float32, uint64&,
                                              vec_t<3, float32>& adj_point, float32&, float32&, const mesh_query_point_t& adj_ret) {
    mesh_query_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}
WEFT_FN mesh_query_point_t mesh_query_point_sign_winding_number(uint64 id, const vec_t<3, float32>& point, float32 max_dist,
                                                                float32 accuracy, float32 threshold) {
    return mesh_query_point_impl(id, point, max_dist, 4, accuracy, threshold);
}
WEFT_FN void adj_mesh_query_point_sign_winding_number(uint64 id, const vec_t<3, float32>& point, float32 max_dist, float32, float32,
                                                      uint64&, vec_t<3, float32>& adj_point, float32&, float32&, float32&,
                                                      const mesh_query_point_t& adj_ret) {
    mesh_query_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}

// Furthest point: among faces, the vertex farthest from p, strictly beyond min_dist.
WEFT_FN mesh_query_point_t mesh_query_furthest_point_no_sign(uint64 id, const vec_t<3, float32>& point, float32 min_dist) {
    const mesh_t* m = mesh_of(id);
    const bvh_t& bvh = m->bvh;
    geo::v3 p = geo::from(point);
    float32 best = min_dist > 0.0f ? min_dist * min_dist : -1.0f;
    mesh_query_point_t r = mesh_point_result(false, 0.0f, 0, 0.0f, 0.0f);
    int32 stack[WEFT_BVH_STACK];
    int32 count = 0;
    if (bvh.num_items > 0) stack[count++] = bvh.root;
    while (count) {
        const bvh_node_t& n = bvh.nodes[stack[--count]];
        if (!(geo::box_far_distance_sq(p, node_lo(n), node_hi(n)) > best)) continue;
        if (n.b >= 0) {
            push_children(n, stack, count);
            continue;
        }
        for (int32 k = n.a; k < n.a - n.b; ++k) {
            int32 f = bvh.prims[k];
            geo::v3 a, b, c;
            mesh_face(m, f, a, b, c);
            if (geo::triangle_degenerate(a, b, c)) continue;
            float32 da = geo::length_sq(a - p), db = geo::length_sq(b - p), dc = geo::length_sq(c - p);
            float32 d = geo::fmax_(da, geo::fmax_(db, dc));
            if (d > best) {
                best = d;
                r = mesh_point_result(true, 0.0f, f, da == d ? 1.0f : 0.0f, da != d && db == d ? 1.0f : 0.0f);
            }
        }
    }
    return r;
}

// ------------------------------------------------------------------------------------- rays

WEFT_FN mesh_query_ray_t mesh_query_ray(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir, float32 max_t, int32 root) {
    const mesh_t* m = mesh_of(id);
    mesh_query_ray_t r{};
    int32 face = 0;
    float32 t, u, v, sign;
    if (!mesh_ray_closest(m, geo::from(start), geo::from(dir), max_t, root, face, t, u, v, sign)) return r;
    geo::v3 a, b, c;
    mesh_face(m, face, a, b, c);
    r.f_result = true;
    r.f_sign = sign;
    r.f_face = face;
    r.f_t = t;
    r.f_u = u;
    r.f_v = v;
    r.f_normal = geo::to_vec(geo::normalized(geo::cross(b - a, c - a)));
    return r;
}

// t = n.(c - s) / n.d, the hit h = s + t d, and (u, v) the barycentrics of h on the face.
WEFT_FN void adj_mesh_query_ray(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir, float32 max_t, int32 root,
                                uint64&, vec_t<3, float32>& adj_start, vec_t<3, float32>& adj_dir, float32&, int32&,
                                const mesh_query_ray_t& adj_ret) {
    const mesh_t* m = mesh_of(id);
    geo::v3 s = geo::from(start), d = geo::from(dir);
    int32 face = 0;
    float32 t, u, v, sign;
    if (!mesh_ray_closest(m, s, d, max_t, root, face, t, u, v, sign)) return;
    geo::v3 a, b, c;
    mesh_face(m, face, a, b, c);
    geo::v3 n = geo::cross(b - a, c - a);
    float32 nd = geo::dot(n, d);
    if (nd == 0.0f) return;
    geo::v3 dt_ds = n * (-1.0f / nd), dt_dd = n * (-t / nd);
    geo::v3 adj_h{0.0f, 0.0f, 0.0f};
    geo::adj_closest_point_triangle(a, b, c, 0, adj_ret.f_u, adj_ret.f_v, adj_h);
    float32 adj_t = adj_ret.f_t + geo::dot(adj_h, d);
    geo::v3 gs = adj_h + dt_ds * adj_t, gd = adj_h * t + dt_dd * adj_t;
    for (int k = 0; k < 3; ++k) {
        adj_start.c[k] += geo::comp(gs, k);
        adj_dir.c[k] += geo::comp(gd, k);
    }
}

WEFT_FN bool mesh_query_ray_anyhit(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir, float32 max_t, int32 root) {
    return mesh_ray_count(mesh_of(id), geo::from(start), geo::from(dir), max_t, root, true) > 0;
}
WEFT_FN int32 mesh_query_ray_count_intersections(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir, int32 root) {
    return mesh_ray_count(mesh_of(id), geo::from(start), geo::from(dir), INFINITY, root, false);
}

// ----------------------------------------------------------------------- AABB / sphere queries

enum { MESH_QUERY_SPHERE = 4 };

WEFT_FN mesh_query_aabb_t mesh_query_aabb(uint64 id, const vec_t<3, float32>& lo, const vec_t<3, float32>& hi) {
    return bvh_query_make(id, BVH_QUERY_AABB, geo::from(lo), geo::from(hi), 0.0f, -1);
}
WEFT_FN mesh_query_aabb_t mesh_query_sphere(uint64 id, const vec_t<3, float32>& center, float32 radius) {
    mesh_query_aabb_t q = bvh_query_make(id, BVH_QUERY_SPHERE, geo::from(center), geo::v3{0.0f, 0.0f, 0.0f}, radius, -1);
    q.kind = MESH_QUERY_SPHERE;
    return q;
}

// wp.mesh_query_next / mesh_query_aabb_next(query, index): (found, query, face index).
WEFT_FN tuple_t<bool, mesh_query_aabb_t, int32> mesh_query_next(mesh_query_aabb_t query, int32 index) {
    bool sphere = query.kind == MESH_QUERY_SPHERE;
    if (sphere) query.kind = BVH_QUERY_SPHERE;
    bool found;
    for (;;) {
        int32 face = index;
        found = bvh_query_advance(query, face, INFINITY);
        if (!found) break;
        if (sphere) {  // narrow phase: the face's closest point within the radius
            geo::v3 a, b, c;
            mesh_face(mesh_of(query.id), face, a, b, c);
            float32 u, v;
            int32 reg;
            geo::closest_point_triangle(a, b, c, query.a, &u, &v, &reg);
            geo::v3 q = a * u + b * v + c * (1.0f - u - v);
            if (geo::length_sq(q - query.a) > query.radius * query.radius) continue;
        }
        index = face;
        break;
    }
    if (sphere) query.kind = MESH_QUERY_SPHERE;
    return tuple_t<bool, mesh_query_aabb_t, int32>{found, {query, {index, {}}}};
}

// ------------------------------------------------------------------------------- evaluation

WEFT_FN vec_t<3, float32> mesh_eval_position(uint64 id, int32 face, float32 u, float32 v) {
    geo::v3 a, b, c;
    mesh_face(mesh_of(id), face, a, b, c);
    return geo::to_vec(a * u + b * v + c * (1.0f - u - v));
}

WEFT_FN void mesh_accumulate_vertex_grads(const array_t<vec_t<3, float32>>& arr, const int32* idx, float32 u, float32 v,
                                          const vec_t<3, float32>& adj_ret) {
    if (!arr.grad) return;
    float32 w[3] = {u, v, 1.0f - u - v};
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) atomic_add_raw(&arr.grad[idx[i]].c[k], w[i] * adj_ret.c[k]);
}

WEFT_FN void adj_mesh_eval_position(uint64 id, int32 face, float32 u, float32 v, uint64&, int32&, float32& adj_u, float32& adj_v,
                                    const vec_t<3, float32>& adj_ret) {
    const mesh_t* m = mesh_of(id);
    geo::v3 a, b, c, g = geo::from(adj_ret);
    mesh_face(m, face, a, b, c);
    adj_u += geo::dot(g, a - c);
    adj_v += geo::dot(g, b - c);
    mesh_accumulate_vertex_grads(m->points, m->indices.data + 3 * face, u, v, adj_ret);
}

WEFT_FN vec_t<3, float32> mesh_eval_velocity(uint64 id, int32 face, float32 u, float32 v) {
    const mesh_t* m = mesh_of(id);
    if (!m->velocities.data) return vec_t<3, float32>();
    const int32* idx = m->indices.data + 3 * face;
    geo::v3 a = geo::from(m->velocities.data[idx[0]]), b = geo::from(m->velocities.data[idx[1]]),
            c = geo::from(m->velocities.data[idx[2]]);
    return geo::to_vec(a * u + b * v + c * (1.0f - u - v));
}

WEFT_FN void adj_mesh_eval_velocity(uint64 id, int32 face, float32 u, float32 v, uint64&, int32&, float32& adj_u, float32& adj_v,
                                    const vec_t<3, float32>& adj_ret) {
    const mesh_t* m = mesh_of(id);
    if (!m->velocities.data) return;
    const int32* idx = m->indices.data + 3 * face;
    geo::v3 a = geo::from(m->velocities.data[idx[0]]), b = geo::from(m->velocities.data[idx[1]]),
            c = geo::from(m->velocities.data[idx[2]]), g = geo::from(adj_ret);
    adj_u += geo::dot(g, a - c);
    adj_v += geo::dot(g, b - c);
    mesh_accumulate_vertex_grads(m->velocities, idx, u, v, adj_ret);
}

WEFT_FN vec_t<3, float32> mesh_eval_face_normal(uint64 id, int32 face) {
    geo::v3 a, b, c;
    mesh_face(mesh_of(id), face, a, b, c);
    return geo::to_vec(geo::normalized(geo::cross(b - a, c - a)));
}
WEFT_FN vec_t<3, float32> mesh_get_point(uint64 id, int32 index) {
    const mesh_t* m = mesh_of(id);
    return m->points.data[m->indices.data[index]];
}
WEFT_FN vec_t<3, float32> mesh_get_velocity(uint64 id, int32 index) {
    const mesh_t* m = mesh_of(id);
    if (!m->velocities.data) return vec_t<3, float32>();
    return m->velocities.data[m->indices.data[index]];
}
WEFT_FN int32 mesh_get_index(uint64 id, int32 index) { return mesh_of(id)->indices.data[index]; }
WEFT_FN mesh_view_t mesh_get(uint64 id) {
    const mesh_t* m = mesh_of(id);
    mesh_view_t r;
    r.f_points = m->points;
    r.f_velocities = m->velocities;
    r.f_indices = m->indices;
    return r;
}
WEFT_FN uint64 mesh_get_bvh(uint64 id) { return id; }
WEFT_FN int32 mesh_get_group_root(uint64 id, int32 group) { return bvh_get_group_root(id, group); }

}  // namespace weft
