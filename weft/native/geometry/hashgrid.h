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

// Physical cell of physical cell coordinates (each in [0, dim)).
template <typename T>
WEFT_FN int32 hash_grid_cell_index(const hash_grid_t<T>& g, int32 x, int32 y, int32 z) {
    return (z * g.dim_y + y) * g.dim_x + x;
}

// Two int32 in one uint64 (lo, hi) and back: the query keeps its ranges packed in pairs.
WEFT_FN uint64 hash_grid_pack(int32 lo, int32 hi) { return uint64(uint32(lo)) | (uint64(uint32(hi)) << 32); }
WEFT_FN int32 hash_grid_lo(uint64 v) { return int32(uint32(v)); }
WEFT_FN int32 hash_grid_hi(uint64 v) { return int32(uint32(v >> 32)); }

// The iteration state of a hash grid query (wp.HashGridQuery): the box of cells still to visit,
// in physical coordinates (each axis runs from its first to its last cell, wrapping at the grid's
// dimension; z < 0 once done), and the rest of the current run of candidates. Stepping physical
// cells spares the three divisions per cell that wrapping virtual ones costs. Keep it at 64
// bytes and few fields: g++ -O3 keeps a query this size in registers across
// wp.hash_grid_query_next's by-value round trip (an 88-byte variant ran 1.4x slower), and the
// pairs packed in one uint64 each leave the caller's loop registers of its own (with 14 int32
// fields g++ kept the caller's counter in a vector register, a round trip per candidate).
template <typename T>
struct hash_grid_query_t {
    uint64 id;
    int32 cell_index, cell_end;  // sorted positions of the current run not yet reported
    uint64 x_range, y_range, z_range;  // (first, last) physical cell of each axis, inclusive
    uint64 yz;                         // (y, z) of the current cell
    int32 x;
    int32 group;
    int32 filter_by_group;
    int32 pad;
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

// Point the query at its next run of candidates. A grouped query (filter_by_group) visits one
// cell at a time, narrowed to its group. Any other visits a row segment at a time: the cells
// x .. x_end of row (y, z), or x .. dim_x - 1 when the row wraps; their points are consecutive in
// the sorted order (by physical cell), so they form one run, from the first non-empty cell's start
// to the last one's end, reported in the order cell by cell would report them (empty cells have
// start == end). One run a row instead of one a cell: fewer turns of the caller's loop.
template <typename T>
WEFT_FN void hash_grid_query_set_cell(hash_grid_query_t<T>& q) {
    const hash_grid_t<T>& g = *reinterpret_cast<const hash_grid_t<T>*>(q.id);
    int32 start = 0, end = 0;
    int32 row = hash_grid_cell_index(g, 0, hash_grid_lo(q.yz), hash_grid_hi(q.yz));
    if (q.filter_by_group) {
        int32 cell = row + q.x;
        uint64 key = (uint64(uint32(cell)) << 32) | uint64(uint32(q.group));
        start = hash_grid_lower_bound(g.point_keys, g.cell_starts[cell], g.cell_ends[cell], key);
        end = hash_grid_lower_bound(g.point_keys, start, g.cell_ends[cell], key + 1);
    } else {
        int32 x_last = hash_grid_hi(q.x_range);
        int32 last = q.x <= x_last ? x_last : g.dim_x - 1;
        for (int32 x = q.x; x <= last; ++x) {
            int32 s = g.cell_starts[row + x], e = g.cell_ends[row + x];
            if (s < e) {
                if (start == end) start = s;
                end = e;
            }
        }
    }
    q.cell_index = start;
    q.cell_end = end;
}

// The physical coordinates of the first and last cell of a query along one axis, from the
// virtual ones: at most one period (end >= start + dim visits all dim cells) and at least the
// first cell (an end before the start, as a negative radius gives, visits only the start).
WEFT_FN uint64 hash_grid_query_axis(int32 start, int32 end, int32 dim) {
    int64 span = int64(end) - int64(start);  // in 64 bits: end - start may overflow
    span = span < 0 ? 0 : span >= int64(dim) ? int64(dim) - 1 : span;
    int32 first = start % dim;
    if (first < 0) first += dim;
    return hash_grid_pack(first, int32((int64(first) + span) % int64(dim)));
}

// The next physical coordinate along an axis of dim cells.
WEFT_FN int32 hash_grid_step(int32 c, int32 dim) { return c + 1 == dim ? 0 : c + 1; }

template <typename T>
WEFT_FN hash_grid_query_t<T> hash_grid_query_make(uint64 id, const vec_t<3, T>& p, T radius, int32 group,
                                                  int32 filter) {
    hash_grid_query_t<T> q = {};
    q.id = id;
    q.group = group;
    q.filter_by_group = 0;
    const hash_grid_t<T>* g = reinterpret_cast<const hash_grid_t<T>*>(id);
    if (!g || g->scalar_bytes != int32(sizeof(T)) || g->num_points <= 0) {
        q.id = 0;  // nothing to visit: hash_grid_query_next returns false
        return q;
    }
    q.filter_by_group = filter && g->has_groups && g->point_keys ? 1 : 0;
    T inv = g->cell_width_inv;
    q.x_range = hash_grid_query_axis(hash_grid_scaled_coord(T(p.c[0] - radius), inv), hash_grid_scaled_coord(T(p.c[0] + radius), inv),
                                     g->dim_x);
    q.y_range = hash_grid_query_axis(hash_grid_scaled_coord(T(p.c[1] - radius), inv), hash_grid_scaled_coord(T(p.c[1] + radius), inv),
                                     g->dim_y);
    q.z_range = hash_grid_query_axis(hash_grid_scaled_coord(T(p.c[2] - radius), inv), hash_grid_scaled_coord(T(p.c[2] + radius), inv),
                                     g->dim_z);
    q.x = hash_grid_lo(q.x_range);
    q.yz = hash_grid_pack(hash_grid_lo(q.y_range), hash_grid_lo(q.z_range));
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
        int32 y = hash_grid_lo(q.yz), z = hash_grid_hi(q.yz);
        if (z < 0) return false;
        if (!q.filter_by_group && q.x > hash_grid_hi(q.x_range)) {  // a wrapped row: its part from x = 0
            q.x = 0;
        } else if (q.filter_by_group && q.x != hash_grid_hi(q.x_range)) {
            q.x = hash_grid_step(q.x, g.dim_x);
        } else {
            q.x = hash_grid_lo(q.x_range);
            if (y != hash_grid_hi(q.y_range)) {
                y = hash_grid_step(y, g.dim_y);
            } else {
                y = hash_grid_lo(q.y_range);
                if (z == hash_grid_hi(q.z_range)) {
                    q.yz = hash_grid_pack(y, -1);
                    return false;
                }
                z = hash_grid_step(z, g.dim_z);
            }
            q.yz = hash_grid_pack(y, z);
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
