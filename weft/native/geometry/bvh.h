// Bounding volume hierarchies in kernels: the layout weft.geometry.Bvh builds (host side, in
// build.cpp) and the queries over it: wp.bvh_query_aabb / _ray / _sphere / _capsule advanced by
// wp.bvh_query_next, and wp.bvh_get_group_root.
//
// Layout (shared with build.cpp and weft/geometry/bvh.py's ctypes mirror):
//   bvh_node_t: bounds, then (a, b): an inner node has children a and b (b >= 0); a leaf has
//               b = -count and holds the items prims[a], ..., prims[a + count - 1].
//   bvh_t:      the nodes, the leaf item order, the items' own bounds (the user's lowers /
//               uppers, or a mesh's triangle bounds) and the root of every group (sorted ids).
//   bvh4_node_t: a 4-wide copy of a mesh's tree for CPU rays (null elsewhere), see below.
// A BVH's id (what kernels receive as a uint64) is the address of its bvh_t.
#pragma once
#include "math.h"
#if !defined(WEFT_CUDA) && defined(__SSE2__)
#include <emmintrin.h>
#define WEFT_BVH4_SIMD 1
#endif

namespace weft {

struct bvh_node_t {
    float32 lo[3];
    int32 a;
    float32 hi[3];
    int32 b;
};

// A node of the 4-wide tree (128 bytes: two cache lines): the boxes of up to four children of
// the binary tree, axis by axis (lo[axis][slot]), so that one ray meets all four in a few SIMD
// instructions. Made from the binary tree after its build by collapsing every inner node with
// its inner children (largest area first; build.cpp weft_bvh_widen), its boxes rewritten by
// every refit. The slots' boxes are binary nodes' own boxes, so a ray meets the same leaves
// either way (a node's slab interval holds its children's: skipping it drops no hit). Nodes
// sit on 64-byte boundaries (bvh.py).
struct bvh4_node_t {
    float32 lo[3][4];
    float32 hi[3][4];
    int32 child[4];  // an inner slot: its wide node; a leaf slot: its first item in prims
    int32 count[4];  // 0: an inner node; > 0: a leaf of count items; -1: no child
};

struct bvh_t {
    bvh_node_t* nodes;
    int32* prims;
    vec_t<3, float32>* item_lowers;  // boxes: the user's lowers / uppers (null for a mesh's faces)
    vec_t<3, float32>* item_uppers;
    const vec_t<3, float32>* tri_points;  // a mesh's faces: their bounds come from the vertices
    const int32* tri_indices;
    int32* group_ids;    // the distinct group ids, increasing
    int32* group_roots;  // the subtree root of group_ids[k]
    const bvh4_node_t* wide;  // a mesh's 4-wide tree on the CPU (its root is node 0), else null
    const int32* leaf_tris;   // with wide: the faces' vertex indices in leaf order (3 per slot of prims)
    int32 num_nodes;
    int32 num_items;
    int32 root;
    int32 num_groups;
};

#define WEFT_BVH_STACK 64  // build.cpp keeps trees shallower than this

WEFT_FN geo::v3 node_lo(const bvh_node_t& n) { return geo::v3{n.lo[0], n.lo[1], n.lo[2]}; }
WEFT_FN geo::v3 node_hi(const bvh_node_t& n) { return geo::v3{n.hi[0], n.hi[1], n.hi[2]}; }

// The iteration state of a BVH query (wp.BvhQuery): what is asked (kind and shape), a stack of
// nodes still to visit and the rest of the leaf being reported.
enum { BVH_QUERY_AABB = 0, BVH_QUERY_RAY = 1, BVH_QUERY_SPHERE = 2, BVH_QUERY_CAPSULE = 3 };

struct bvh_query_t {
    uint64 id;
    int32 kind;
    geo::v3 a;  // aabb: lower; ray / capsule: start; sphere: center
    geo::v3 b;  // aabb: upper; ray / capsule: direction
    float32 radius;
    int32 leaf_next, leaf_end;  // items of the current leaf not yet tested
    int32 count;                // nodes on the stack
    int32 stack[WEFT_BVH_STACK];
};

// Adjoint conventions: a query carries no gradient, but the adjoint pass declares and joins
// adjoint variables of every type (branches merge them with where / select).
WEFT_FN bvh_query_t& operator+=(bvh_query_t& a, const bvh_query_t&) { return a; }
template <typename C>
WEFT_FN void adj_where(C, const bvh_query_t&, const bvh_query_t&, C&, bvh_query_t&, bvh_query_t&, const bvh_query_t&) {}
template <typename C>
WEFT_FN void adj_select(C, const bvh_query_t&, const bvh_query_t&, C&, bvh_query_t&, bvh_query_t&, const bvh_query_t&) {}

WEFT_FN int32 bvh_start_node(const bvh_t* bvh, int32 root) {
    if (root >= 0 && root < bvh->num_nodes) return root;
    return bvh->num_items > 0 ? bvh->root : -1;
}

WEFT_FN bvh_query_t bvh_query_make(uint64 id, int32 kind, const geo::v3& a, const geo::v3& b, float32 radius, int32 root) {
    bvh_query_t q;
    q.id = id;
    q.kind = kind;
    q.a = a;
    q.b = b;
    q.radius = geo::fmax_(radius, 0.0f);
    q.leaf_next = q.leaf_end = 0;
    int32 start = bvh_start_node(reinterpret_cast<const bvh_t*>(id), root);
    q.count = start >= 0 ? 1 : 0;
    q.stack[0] = start;
    return q;
}

// Whether the query's shape meets the box [lo, hi] (for rays: somewhere in [0, max_t]).
WEFT_FN bool bvh_query_hits_box(const bvh_query_t& q, const geo::v3& lo, const geo::v3& hi, float32 max_t) {
    float32 t;
    switch (q.kind) {
        case BVH_QUERY_AABB:
            return geo::boxes_overlap(q.a, q.b, lo, hi);
        case BVH_QUERY_RAY:
            return geo::ray_box(q.a, q.b, lo, hi, max_t, &t);
        case BVH_QUERY_SPHERE:
            return geo::box_distance_sq(q.a, lo, hi) <= q.radius * q.radius;
        default: {  // capsule: the segment against the box grown by the radius
            geo::v3 r{q.radius, q.radius, q.radius};
            return geo::ray_box(q.a, q.b, lo - r, hi + r, max_t, &t);
        }
    }
}

// An item's bounds: its box, or the bounds of its triangle (meshes keep no face boxes: a refit
// then touches only the vertices and the nodes).
WEFT_FN void bvh_item_bounds(const bvh_t* bvh, int32 item, geo::v3& lo, geo::v3& hi) {
    if (bvh->tri_indices) {
        const int32* t = bvh->tri_indices + 3 * item;
        geo::v3 a = geo::from(bvh->tri_points[t[0]]), b = geo::from(bvh->tri_points[t[1]]), c = geo::from(bvh->tri_points[t[2]]);
        lo = geo::vmin(a, geo::vmin(b, c));
        hi = geo::vmax(a, geo::vmax(b, c));
    } else {
        lo = geo::from(bvh->item_lowers[item]);
        hi = geo::from(bvh->item_uppers[item]);
    }
}

// The next item whose bounds the query meets: (found, advanced query, item index).
WEFT_FN bool bvh_query_advance(bvh_query_t& q, int32& index, float32 max_t) {
    const bvh_t* bvh = reinterpret_cast<const bvh_t*>(q.id);
    for (;;) {
        while (q.leaf_next < q.leaf_end) {
            int32 item = bvh->prims[q.leaf_next++];
            geo::v3 lo, hi;
            bvh_item_bounds(bvh, item, lo, hi);
            if (bvh_query_hits_box(q, lo, hi, max_t)) {
                index = item;
                return true;
            }
        }
        if (q.count == 0) return false;
        const bvh_node_t& n = bvh->nodes[q.stack[--q.count]];
        if (!bvh_query_hits_box(q, node_lo(n), node_hi(n), max_t)) continue;
        if (n.b < 0) {
            q.leaf_next = n.a;
            q.leaf_end = n.a - n.b;
        } else if (q.count + 2 <= WEFT_BVH_STACK) {
            q.stack[q.count++] = n.b;
            q.stack[q.count++] = n.a;
        }
    }
}

WEFT_FN bvh_query_t bvh_query_aabb(uint64 id, const vec_t<3, float32>& lo, const vec_t<3, float32>& hi, int32 root) {
    return bvh_query_make(id, BVH_QUERY_AABB, geo::from(lo), geo::from(hi), 0.0f, root);
}
WEFT_FN bvh_query_t bvh_query_ray(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir, int32 root) {
    return bvh_query_make(id, BVH_QUERY_RAY, geo::from(start), geo::from(dir), 0.0f, root);
}
WEFT_FN bvh_query_t bvh_query_sphere(uint64 id, const vec_t<3, float32>& center, float32 radius, int32 root) {
    return bvh_query_make(id, BVH_QUERY_SPHERE, geo::from(center), geo::v3{0.0f, 0.0f, 0.0f}, radius, root);
}
WEFT_FN bvh_query_t bvh_query_capsule(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir, float32 radius,
                                      int32 root) {
    return bvh_query_make(id, BVH_QUERY_CAPSULE, geo::from(start), geo::from(dir), radius, root);
}

// wp.bvh_query_next(query, index, max_dist): (found, query, index); index unchanged when done.
WEFT_FN tuple_t<bool, bvh_query_t, int32> bvh_query_next(bvh_query_t query, int32 index, float32 max_dist) {
    bool found = bvh_query_advance(query, index, max_dist);
    return tuple_t<bool, bvh_query_t, int32>{found, {query, {index, {}}}};
}

WEFT_FN int32 bvh_get_group_root(uint64 id, int32 group) {
    const bvh_t* bvh = reinterpret_cast<const bvh_t*>(id);
    int32 lo = 0, hi = bvh->num_groups;  // binary search of the sorted ids (any int32 may be a group)
    while (lo < hi) {
        int32 mid = lo + (hi - lo) / 2;
        if (bvh->group_ids[mid] < group)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < bvh->num_groups && bvh->group_ids[lo] == group ? bvh->group_roots[lo] : -1;
}

}  // namespace weft
