// Hash grids in kernels: the layout weft.geometry.hash_grid.HashGrid builds (with weft kernels and
// a radix sort, see hash_grid.py) and the queries over it: wp.hash_grid_query advanced by
// wp.hash_grid_query_next (or a `for` loop), wp.hash_grid_point_id.
//
// A grid of dim_x * dim_y * dim_z cells of width cell_width covers all of space by wrapping: the
// point p lies in the virtual cell floor(p / cell_width) (per axis), stored in the physical cell
// whose coordinates are the virtual ones modulo the dimensions. Points are sorted by physical
// cell (then, for grouped builds, by group); cell_starts / cell_ends delimit each cell's run of
// the sorted order, point_ids maps a sorted position to the original point index.
//
// A query visits every cell overlapping the box point +- radius (each physical cell once: a box
// wider than the grid is cut to one period per axis), so it reports a superset of the points
// within radius; callers test the distance themselves.
//
// Layout (shared with hash_grid.py's ctypes mirror): the type-independent fields first, so that
// hash_grid_point_id reads point_ids at the same offset whatever the coordinate type.
#pragma once
#include "../core.h"
#include "../vec_types.h"
#include "../tuple.h"

namespace weft {

template <typename T>
struct hash_grid_t {
    int32* point_cells;   // physical cell of each sorted position
    int32* point_ids;     // original point index of each sorted position
    uint64* point_keys;   // (cell << 32 | group bits) of each sorted position, grouped builds only
    int32* cell_starts;   // first sorted position of each cell (dim_x * dim_y * dim_z of them)
    int32* cell_ends;     // one past its last (equal to the start: empty)
    int32 dim_x, dim_y, dim_z;
    int32 num_points;     // points of the last build (0 before any)
    int32 has_groups;     // the last build was grouped (point_keys valid)
    int32 scalar_bytes;   // sizeof(T): a query of another precision reports nothing
    T cell_width;
    T cell_width_inv;
};

// Virtual cell coordinate of a coordinate already scaled by 1 / cell_width: floor, clamped to
// [INT_MIN, INT_MAX - 1] (a query may step one past its end cell without overflow) and NaN -> 0.
WEFT_FN int32 hash_grid_cell_coord(float64 v) {
    float64 c = floor(v);
    if (c >= 2147483646.0) return 2147483646;
    if (c >= -2147483648.0) return int32(c);
    if (c < -2147483648.0) return int32(-2147483647 - 1);
    return 0;  // NaN
}
WEFT_FN int32 hash_grid_cell_coord(float32 v) { return hash_grid_cell_coord(float64(v)); }
WEFT_FN int32 hash_grid_cell_coord(float16 v) { return hash_grid_cell_coord(float64(float32(v))); }

// Physical cell of virtual cell coordinates: each wrapped into [0, dim).
template <typename T>
WEFT_FN int32 hash_grid_index(const hash_grid_t<T>& g, int32 x, int32 y, int32 z) {
    int32 cx = x % g.dim_x, cy = y % g.dim_y, cz = z % g.dim_z;
    if (cx < 0) cx += g.dim_x;
    if (cy < 0) cy += g.dim_y;
    if (cz < 0) cz += g.dim_z;
    return (cz * g.dim_y + cy) * g.dim_x + cx;
}

// The coordinate times 1 / cell_width, rounded to T (float16 products are computed in float32).
template <typename T>
WEFT_FN int32 hash_grid_scaled_coord(T v, T inv) {
    return hash_grid_cell_coord(T(v * inv));
}

// The physical cell of a point (the build and the queries agree through this one function).
template <typename T>
WEFT_FN int32 hash_grid_cell_of(uint64 id, const vec_t<3, T>& p) {
    const hash_grid_t<T>& g = *reinterpret_cast<const hash_grid_t<T>*>(id);
    return hash_grid_index(g, hash_grid_scaled_coord(p.c[0], g.cell_width_inv),
                           hash_grid_scaled_coord(p.c[1], g.cell_width_inv),
                           hash_grid_scaled_coord(p.c[2], g.cell_width_inv));
}

// The iteration state of a hash grid query (wp.HashGridQuery): the box of virtual cells still to
// visit and the rest of the current cell's run. Keep it at 64 bytes: g++ -O3 keeps a query this
// size in registers across wp.hash_grid_query_next's by-value round trip, not a larger one (an
// 88-byte variant that stepped physical cells to avoid three divisions per cell ran 1.4x slower).
template <typename T>
struct hash_grid_query_t {
    uint64 id;
    int32 x_start, y_start, z_start;
    int32 x_end, y_end, z_end;
    int32 x, y, z;
    int32 cell_index, cell_end;  // sorted positions of the current cell not yet reported
    int32 group;
    int32 filter_by_group;
};

typedef hash_grid_query_t<float16> hash_grid_query_h;
typedef hash_grid_query_t<float32> hash_grid_query_f;
typedef hash_grid_query_t<float64> hash_grid_query_d;

// Adjoint conventions: a query carries no gradient, but the adjoint pass declares and joins
// adjoint variables of every type (branches merge them with where / select).
template <typename T>
WEFT_FN hash_grid_query_t<T>& operator+=(hash_grid_query_t<T>& a, const hash_grid_query_t<T>&) {
    return a;
}
template <typename C, typename T>
WEFT_FN void adj_where(C, const hash_grid_query_t<T>&, const hash_grid_query_t<T>&, C&, hash_grid_query_t<T>&,
                       hash_grid_query_t<T>&, const hash_grid_query_t<T>&) {}
template <typename C, typename T>
WEFT_FN void adj_select(C, const hash_grid_query_t<T>&, const hash_grid_query_t<T>&, C&, hash_grid_query_t<T>&,
                        hash_grid_query_t<T>&, const hash_grid_query_t<T>&) {}

// First position in [lo, hi) whose key is >= key.
WEFT_FN int32 hash_grid_lower_bound(const uint64* keys, int32 lo, int32 hi, uint64 key) {
    while (lo < hi) {
        int32 mid = lo + (hi - lo) / 2;
        if (keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// Point the query at the run of its current cell (x, y, z), narrowed to its group if it has one.
template <typename T>
WEFT_FN void hash_grid_query_set_cell(hash_grid_query_t<T>& q) {
    const hash_grid_t<T>& g = *reinterpret_cast<const hash_grid_t<T>*>(q.id);
    int32 cell = hash_grid_index(g, q.x, q.y, q.z);
    int32 start = g.cell_starts[cell], end = g.cell_ends[cell];
    if (q.filter_by_group && g.has_groups && g.point_keys) {
        uint64 key = (uint64(uint32(cell)) << 32) | uint64(uint32(q.group));
        start = hash_grid_lower_bound(g.point_keys, start, end, key);
        end = hash_grid_lower_bound(g.point_keys, start, end, key + 1);
    }
    q.cell_index = start;
    q.cell_end = end;
}

// The last cell of a query along one axis: at most one period past the first (in 64 bits, since
// start + dim - 1 may overflow).
WEFT_FN int32 hash_grid_query_end(int32 start, int32 end, int32 dim) {
    return int64(end) - int64(start) >= int64(dim) ? start + (dim - 1) : end;
}

template <typename T>
WEFT_FN hash_grid_query_t<T> hash_grid_query_make(uint64 id, const vec_t<3, T>& p, T radius, int32 group,
                                                  int32 filter) {
    hash_grid_query_t<T> q = {};
    q.id = id;
    q.group = group;
    q.filter_by_group = filter;
    const hash_grid_t<T>* g = reinterpret_cast<const hash_grid_t<T>*>(id);
    if (!g || g->scalar_bytes != int32(sizeof(T)) || g->num_points <= 0) {
        q.id = 0;  // nothing to visit: hash_grid_query_next returns false
        return q;
    }
    T inv = g->cell_width_inv;
    q.x_start = hash_grid_scaled_coord(T(p.c[0] - radius), inv);
    q.y_start = hash_grid_scaled_coord(T(p.c[1] - radius), inv);
    q.z_start = hash_grid_scaled_coord(T(p.c[2] - radius), inv);
    q.x_end = hash_grid_query_end(q.x_start, hash_grid_scaled_coord(T(p.c[0] + radius), inv), g->dim_x);
    q.y_end = hash_grid_query_end(q.y_start, hash_grid_scaled_coord(T(p.c[1] + radius), inv), g->dim_y);
    q.z_end = hash_grid_query_end(q.z_start, hash_grid_scaled_coord(T(p.c[2] + radius), inv), g->dim_z);
    q.x = q.x_start;
    q.y = q.y_start;
    q.z = q.z_start;
    hash_grid_query_set_cell(q);
    return q;
}

template <typename T>
WEFT_FN hash_grid_query_t<T> hash_grid_query(uint64 id, const vec_t<3, T>& point, T max_dist) {
    return hash_grid_query_make(id, point, max_dist, 0, 0);
}
template <typename T>
WEFT_FN hash_grid_query_t<T> hash_grid_query(uint64 id, const vec_t<3, T>& point, T max_dist, int32 group) {
    return hash_grid_query_make(id, point, max_dist, group, 1);
}

// The next candidate: true and its original index in `index`, or false when the box is done.
template <typename T>
WEFT_FN bool hash_grid_query_advance(hash_grid_query_t<T>& q, int32& index) {
    if (!q.id) return false;
    const hash_grid_t<T>& g = *reinterpret_cast<const hash_grid_t<T>*>(q.id);
    for (;;) {
        if (q.cell_index < q.cell_end) {
            index = g.point_ids[q.cell_index++];
            return true;
        }
        if (q.z > q.z_end) return false;
        if (++q.x > q.x_end) {
            q.x = q.x_start;
            if (++q.y > q.y_end) {
                q.y = q.y_start;
                if (++q.z > q.z_end) return false;
            }
        }
        hash_grid_query_set_cell(q);
    }
}

// wp.hash_grid_query_next(query, index): (found, query, index); index unchanged when done.
template <typename T>
WEFT_FN tuple_t<bool, hash_grid_query_t<T>, int32> hash_grid_query_next(hash_grid_query_t<T> query, int32 index) {
    bool found = hash_grid_query_advance(query, index);
    return tuple_t<bool, hash_grid_query_t<T>, int32>{found, {query, {index, {}}}};
}

// wp.hash_grid_point_id(id, index): the original index of the point at sorted position `index`
// (-1 before a build, or for a position outside [0, num_points)).
WEFT_FN int32 hash_grid_point_id(uint64 id, int32 index) {
    const hash_grid_t<float32>* g = reinterpret_cast<const hash_grid_t<float32>*>(id);
    if (!g || !g->point_ids || index < 0 || index >= g->num_points) return -1;
    return g->point_ids[index];
}

// Build steps (kernels in hash_grid.py): the sort key of a grouped build.
WEFT_FN uint64 hash_grid_point_key(int32 cell, int32 group) {
    return (uint64(uint32(cell)) << 32) | uint64(uint32(group));
}

}  // namespace weft
