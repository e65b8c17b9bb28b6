// Tiled BVH and mesh queries (wp.tile_bvh_query_aabb / _ray, wp.tile_mesh_query_aabb and their
// *_tiled names): a block's threads share one traversal, each receiving the next item. A block is
// one thread here, so a tiled query is an ordinary query with its next result fetched ahead (so
// that wp.tile_query_valid can tell whether one is left); next returns that item as a one-element
// tile (-1 once the query is done) and fetches the following one.
#pragma once
#include "tile.h"
#include "../geometry/mesh.h"

WEFT_TILE_BEGIN

struct tile_query_t {
    bvh_query_t q;
    int32 index;
    int32 mesh;  // faces of a mesh (mesh_query_next's narrow phase) rather than BVH items
    bool valid;
};
// queries carry no gradient; the adjoint pass still declares, joins and accumulates them
WEFT_FN tile_query_t& operator+=(tile_query_t& a, const tile_query_t&) { return a; }
template <typename C>
WEFT_FN void adj_where(C, const tile_query_t&, const tile_query_t&, C&, tile_query_t&, tile_query_t&, const tile_query_t&) {}
template <typename C>
WEFT_FN void adj_select(C, const tile_query_t&, const tile_query_t&, C&, tile_query_t&, tile_query_t&, const tile_query_t&) {}

WEFT_FN void tile_query_fetch(tile_query_t& t) {
    if (t.mesh) {
        tuple_t<bool, mesh_query_aabb_t, int32> r = mesh_query_next(t.q, t.index);
        t.valid = tuple_get<0>(r);
        t.q = tuple_get<1>(r);
        t.index = tuple_get<2>(r);
    } else {
        t.valid = bvh_query_advance(t.q, t.index, INFINITY);
    }
}
WEFT_FN tile_query_t tile_query_start(const bvh_query_t& q, int32 mesh) {
    tile_query_t t{q, -1, mesh, false};
    tile_query_fetch(t);
    return t;
}
WEFT_FN tile_query_t tile_bvh_query_aabb(uint64 id, const vec_t<3, float32>& lo, const vec_t<3, float32>& hi) {
    return tile_query_start(bvh_query_aabb(id, lo, hi, -1), 0);
}
WEFT_FN tile_query_t tile_bvh_query_ray(uint64 id, const vec_t<3, float32>& start, const vec_t<3, float32>& dir) {
    return tile_query_start(bvh_query_ray(id, start, dir, -1), 0);
}
WEFT_FN tile_query_t tile_mesh_query_aabb(uint64 id, const vec_t<3, float32>& lo, const vec_t<3, float32>& hi) {
    return tile_query_start(mesh_query_aabb(id, lo, hi), 1);
}
WEFT_FN bool tile_query_valid(const tile_query_t& t) { return t.valid; }
// (the next item as a tile, the advanced query): the frontend rebinds the query's name
WEFT_FN tuple_t<tile_t<int32, 1>, tile_query_t> tile_query_next(tile_query_t t) {
    tile_t<int32, 1> r{{t.valid ? t.index : -1}};
    if (t.valid) tile_query_fetch(t);
    return tuple_t<tile_t<int32, 1>, tile_query_t>{r, {t, {}}};
}

WEFT_TILE_END
