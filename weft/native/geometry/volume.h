// Sparse volumes in kernels: NanoVDB grids (ABI 32), as weft.geometry.nanovdb builds them or loads
// them from .nvdb files, read and written in place: wp.volume_sample / _f / _v / _i (closest or
// trilinear), wp.volume_sample_grad / _f (value and spatial gradient), wp.volume_sample_index /
// _grad_index (an index grid's values held in an array), wp.volume_lookup / _f / _v / _i,
// wp.volume_store / _f / _v / _i, wp.volume_lookup_index, wp.volume_voxel_count and the index <->
// world transforms of points and directions.
//
// A volume's id is the address of its grid: a 672-byte header (the index-to-world map at 296, the
// value type at 636), the tree header (node offsets at 0..31, counts at 32..43), the root (tiles
// keyed by 4096^3 region), then upper (32^3 entries), lower (16^3) and leaf (8^3) nodes. Offsets
// are relative, so a grid reads the same on the host and on a GPU. Node layouts depend on the
// value type only through its size and alignment and the size of its statistics; layout_t
// derives them (nanovdb.py's Layout does the same on the Python side).
//
// Value resolution is NanoVDB's: a coordinate resolves to a leaf value (level 0), an internal
// tile's value (levels 1, 2, 3: lower, upper, root tile) or the root's background (level 4).
// Stores write leaf values only; lookups of a type other than the grid's give zero.
//
// Gradients (Warp's): trilinear samples are differentiable with respect to uvw (the derivative on
// a voxel plane is the positive-side cell's), closest samples are not; index samples also send
// gradients to the value array and the background; the transforms are linear (their adjoints use
// the transposed matrices). Stores, lookups and integer samples carry no gradient.
#pragma once
#include "../core.h"
#include "../vec_types.h"
#include "../tuple.h"

namespace weft {
namespace vdb {

enum : uint32 {
    T_FLOAT = 1, T_DOUBLE = 2, T_INT16 = 3, T_INT32 = 4, T_INT64 = 5, T_VEC3F = 6, T_VEC3D = 7, T_HALF = 9,
    T_UINT32 = 10, T_VEC4F = 17, T_VEC4D = 18, T_INDEX = 19, T_ONINDEX = 20, T_INDEXMASK = 21, T_ONINDEXMASK = 22,
    T_VEC3U8 = 24, T_VEC3U16 = 25, T_UINT8 = 26
};
enum : uint32 { GRID_SIZE = 672, MAP_MATF = 296, MAP_INVMATF = 332, MAP_VECF = 368, MAP_MATD = 384,
                MAP_INVMATD = 456, MAP_VECD = 528, GRID_TYPE = 636 };
enum : uint32 { UPPER_CHILD_MASK = 32 + 4096, UPPER_BASE = 32 + 2 * 4096, LOWER_CHILD_MASK = 32 + 512,
                LOWER_BASE = 32 + 2 * 512, LEAF_VALUE_MASK = 16, LEAF_BASE = 80 };
enum { LEAF_VALUES = 0, LEAF_INDEX = 1, LEAF_ONINDEX = 2, LEAF_NONE = 3 };

struct layout_t {
    uint32 value_size, root_background, root_size, tile_value, tile_size, table_stride;
    uint32 upper_table, lower_table, leaf_table, leaf_size;
    int32 leaf_kind;
};

WEFT_FN constexpr uint32 align_up(uint32 x, uint32 a) { return (x + a - 1u) / a * a; }
// End of (minimum, maximum, average, standard deviation) stored from `start`.
WEFT_FN constexpr uint32 stats_end(uint32 start, uint32 vs, uint32 ss) { return align_up(start + 2u * vs, ss) + 2u * ss; }

// vs / va: size and alignment of a value, ss: size of the average and deviation fields.
WEFT_FN constexpr layout_t make_layout(uint32 vs, uint32 va, uint32 ss, int32 kind, bool mask = false) {
    layout_t L{};
    L.value_size = vs;
    L.root_background = align_up(28u, va);
    L.root_size = align_up(stats_end(L.root_background + vs, vs, ss), 32u);
    L.tile_value = align_up(20u, va);
    L.tile_size = align_up(L.tile_value + vs, 32u);
    L.table_stride = align_up(vs > 8u ? vs : 8u, 8u);
    L.upper_table = align_up(stats_end(UPPER_BASE, vs, ss), 32u);
    L.lower_table = align_up(stats_end(LOWER_BASE, vs, ss), 32u);
    L.leaf_kind = kind;
    if (kind == LEAF_VALUES) {
        L.leaf_table = align_up(stats_end(LEAF_BASE, vs, ss), 32u);
        L.leaf_size = L.leaf_table + 512u * vs;
    } else {
        L.leaf_table = LEAF_BASE;
        L.leaf_size = mask ? 160u : 96u;
    }
    return L;
}

WEFT_FN constexpr layout_t layout_of(uint32 type) {
    switch (type) {
        case T_FLOAT: case T_INT32: case T_UINT32: return make_layout(4, 4, 4, LEAF_VALUES);
        case T_DOUBLE: case T_INT64: return make_layout(8, 8, 8, LEAF_VALUES);
        case T_INT16: case T_HALF: return make_layout(2, 2, 4, LEAF_VALUES);
        case T_VEC3F: return make_layout(12, 4, 4, LEAF_VALUES);
        case T_VEC3D: return make_layout(24, 8, 8, LEAF_VALUES);
        case T_VEC4F: return make_layout(16, 4, 4, LEAF_VALUES);
        case T_VEC4D: return make_layout(32, 8, 8, LEAF_VALUES);
        case T_INDEX: return make_layout(8, 8, 8, LEAF_INDEX);
        case T_ONINDEX: return make_layout(8, 8, 8, LEAF_ONINDEX);
        case T_INDEXMASK: return make_layout(8, 8, 8, LEAF_INDEX, true);
        case T_ONINDEXMASK: return make_layout(8, 8, 8, LEAF_ONINDEX, true);
        case T_VEC3U8: return make_layout(3, 1, 4, LEAF_VALUES);
        case T_VEC3U16: return make_layout(6, 2, 4, LEAF_VALUES);
        case T_UINT8: return make_layout(1, 1, 4, LEAF_VALUES);
        default: return make_layout(8, 8, 8, LEAF_NONE);  // unreadable values: only the tree is walked
    }
}

template <typename T>
WEFT_FN T rd(const uint8* p) { return *reinterpret_cast<const T*>(p); }
WEFT_FN uint8* grid_of(uint64 id) { return reinterpret_cast<uint8*>(id); }
WEFT_FN uint32 grid_type(uint64 id) { return rd<uint32>(grid_of(id) + GRID_TYPE); }
WEFT_FN uint8* tree_of(uint8* g) { return g + GRID_SIZE; }
WEFT_FN uint8* root_of(uint8* g) { return tree_of(g) + rd<uint64>(tree_of(g) + 24); }

WEFT_FN uint64 root_key(int32 i, int32 j, int32 k) {
    return (uint64(uint32(i) >> 12) << 42) | (uint64(uint32(j) >> 12) << 21) | uint64(uint32(k) >> 12);
}
WEFT_FN uint32 upper_slot(int32 i, int32 j, int32 k) {
    return ((uint32(i & 4095) >> 7) << 10) | ((uint32(j & 4095) >> 7) << 5) | (uint32(k & 4095) >> 7);
}
WEFT_FN uint32 lower_slot(int32 i, int32 j, int32 k) {
    return ((uint32(i & 127) >> 3) << 8) | ((uint32(j & 127) >> 3) << 4) | (uint32(k & 127) >> 3);
}
WEFT_FN uint32 leaf_slot(int32 i, int32 j, int32 k) { return (uint32(i & 7) << 6) | (uint32(j & 7) << 3) | uint32(k & 7); }
WEFT_FN bool mask_bit(const uint8* mask, uint32 n) { return (rd<uint64>(mask + 8u * (n >> 6)) >> (n & 63u)) & 1u; }

WEFT_FN uint32 popcount64(uint64 x) {
#if defined(__CUDA_ARCH__)
    return uint32(__popcll(x));
#else
    return uint32(__builtin_popcountll(x));
#endif
}

// Where a coordinate's value lives: `value` (the leaf's value, or the leaf's index fields for
// index grids; a tile's value; the background) at `level`, and the leaf (level 0 only).
struct hit_t {
    uint8* value;
    int32 level;
    uint8* leaf;
};

// The descent below an upper node / a lower node (`lower_out`: the lower node reached, if any).
WEFT_FN hit_t find_in_lower(uint8* lower, const layout_t& L, int32 i, int32 j, int32 k) {
    uint32 n = lower_slot(i, j, k);
    uint8* e = lower + L.lower_table + n * L.table_stride;
    if (!mask_bit(lower + LOWER_CHILD_MASK, n)) return {e, 1, nullptr};
    uint8* leaf = lower + rd<int64>(e);
    uint32 v = L.leaf_kind == LEAF_VALUES ? leaf_slot(i, j, k) * L.value_size : 0u;
    return {leaf + L.leaf_table + v, 0, leaf};
}
WEFT_FN hit_t find_in_upper(uint8* upper, const layout_t& L, int32 i, int32 j, int32 k, uint8** lower_out) {
    uint32 n = upper_slot(i, j, k);
    uint8* e = upper + L.upper_table + n * L.table_stride;
    if (!mask_bit(upper + UPPER_CHILD_MASK, n)) return {e, 2, nullptr};
    uint8* lower = upper + rd<int64>(e);
    *lower_out = lower;
    return find_in_lower(lower, L, i, j, k);
}
// The upper node of a coordinate (null: a root tile's value or the background, in `h`).
WEFT_FN uint8* find_upper(uint8* g, const layout_t& L, int32 i, int32 j, int32 k, hit_t& h) {
    uint8* root = root_of(g);
    uint32 tiles = rd<uint32>(root + 24);
    uint64 key = root_key(i, j, k);
    uint8* tile = root + L.root_size;
    for (uint32 t = 0; t < tiles; ++t, tile += L.tile_size) {
        if (rd<uint64>(tile) != key) continue;
        int64 child = rd<int64>(tile + 8);
        if (child) return root + child;
        h = {tile + L.tile_value, 3, nullptr};
        return nullptr;
    }
    h = {root + L.root_background, 4, nullptr};
    return nullptr;
}

WEFT_FN hit_t find(uint8* g, const layout_t& L, int32 i, int32 j, int32 k) {
    hit_t h;
    uint8* upper = find_upper(g, L, i, j, k, h);
    uint8* lower = nullptr;
    return upper ? find_in_upper(upper, L, i, j, k, &lower) : h;
}

// A walker remembering the last leaf, lower and upper node it reached (NanoVDB's accessor):
// the 8 corners of a trilinear sample mostly share a leaf, and neighbouring leaves a lower node.
// CODE: the grid's value type when known at compile time (its layout then folds to constants),
// 0 to read it from the grid.
template <uint32 CODE = 0>
struct accessor_t {
    uint8* grid;
    layout_t runtime_layout;
    int32 key[3][3];  // origins of the cached leaf, lower and upper node
    uint8* node[3];   // the cached nodes (null: none)

    WEFT_FN explicit accessor_t(uint64 id)
        : grid(grid_of(id)), runtime_layout(layout_of(CODE ? CODE : grid_type(id))), key{}, node{} {}

    WEFT_FN layout_t L() const {
        if constexpr (CODE != 0)
            return layout_of(CODE);
        else
            return runtime_layout;
    }
    WEFT_FN bool cached(int32 level, int32 mask, int32 i, int32 j, int32 k) const {
        return node[level] && (i & mask) == key[level][0] && (j & mask) == key[level][1] && (k & mask) == key[level][2];
    }
    WEFT_FN void remember(int32 level, uint8* p, int32 mask, int32 i, int32 j, int32 k) {
        node[level] = p;
        key[level][0] = i & mask;
        key[level][1] = j & mask;
        key[level][2] = k & mask;
    }

    WEFT_FN hit_t find(int32 i, int32 j, int32 k) {
        const layout_t lay = L();
        if (cached(0, ~7, i, j, k)) {
            uint32 v = lay.leaf_kind == LEAF_VALUES ? leaf_slot(i, j, k) * lay.value_size : 0u;
            return {node[0] + lay.leaf_table + v, 0, node[0]};
        }
        hit_t h;
        if (cached(1, ~127, i, j, k)) {
            h = find_in_lower(node[1], lay, i, j, k);
        } else {
            uint8* upper = cached(2, ~4095, i, j, k) ? node[2] : find_upper(grid, lay, i, j, k, h);
            if (!upper) return h;
            remember(2, upper, ~4095, i, j, k);
            uint8* lower = nullptr;
            h = find_in_upper(upper, lay, i, j, k, &lower);
            if (lower) remember(1, lower, ~127, i, j, k);
        }
        if (h.level == 0) remember(0, h.leaf, ~7, i, j, k);
        return h;
    }
};

// The index of a voxel (level-0 hit): index grids give theirs (0: none); value grids give
// leaf * 512 + n + 1, leaves counted in storage order.
WEFT_FN uint64 voxel_index(uint8* g, const layout_t& L, const hit_t& h, int32 i, int32 j, int32 k) {
    uint32 n = leaf_slot(i, j, k);
    if (L.leaf_kind == LEAF_VALUES) {
        uint8* tree = tree_of(g);
        uint64 first = uint64(tree - g) + rd<uint64>(tree);
        return uint64((h.leaf - g) - first) / L.leaf_size * 512u + n + 1u;
    }
    uint64 offset = rd<uint64>(h.leaf + L.leaf_table);
    if (L.leaf_kind == LEAF_INDEX) return offset + n;
    if (L.leaf_kind != LEAF_ONINDEX) return 0;
    uint32 w = n >> 6;
    uint64 word = rd<uint64>(h.leaf + LEAF_VALUE_MASK + 8u * w), bit = uint64(1) << (n & 63u);
    if (!(word & bit)) return 0;
    uint32 rank = popcount64(word & (bit - 1u));
    if (w > 0) rank += uint32(rd<uint64>(h.leaf + L.leaf_table + 8u) >> (9u * (w - 1u))) & 511u;
    return offset + rank;
}

// ----------------------------------------------------------------------------- value types

template <typename T>
struct value_traits {  // scalars
    typedef T scalar;
    static constexpr unsigned n = 1;
    typedef vec_t<3, T> grad_t;
    static WEFT_FN T& at(T& v, unsigned) { return v; }
    static WEFT_FN const T& at(const T& v, unsigned) { return v; }
    static WEFT_FN T& g(grad_t& m, unsigned, unsigned d) { return m.c[d]; }
    static WEFT_FN const T& g(const grad_t& m, unsigned, unsigned d) { return m.c[d]; }
};
template <unsigned N, typename S>
struct value_traits<vec_t<N, S>> {
    typedef S scalar;
    static constexpr unsigned n = N;
    typedef mat_t<N, 3, S> grad_t;  // rows: value components, columns: x, y, z
    static WEFT_FN S& at(vec_t<N, S>& v, unsigned c) { return v.c[c]; }
    static WEFT_FN const S& at(const vec_t<N, S>& v, unsigned c) { return v.c[c]; }
    static WEFT_FN S& g(grad_t& m, unsigned c, unsigned d) { return m.data[c][d]; }
    static WEFT_FN const S& g(const grad_t& m, unsigned c, unsigned d) { return m.data[c][d]; }
};

template <typename T> struct grid_code { static constexpr uint32 value = 0; };
template <> struct grid_code<float32> { static constexpr uint32 value = T_FLOAT; };
template <> struct grid_code<float64> { static constexpr uint32 value = T_DOUBLE; };
template <> struct grid_code<int32> { static constexpr uint32 value = T_INT32; };
template <> struct grid_code<int64> { static constexpr uint32 value = T_INT64; };
template <> struct grid_code<uint32> { static constexpr uint32 value = T_UINT32; };
template <> struct grid_code<vec_t<3, float32>> { static constexpr uint32 value = T_VEC3F; };
template <> struct grid_code<vec_t<3, float64>> { static constexpr uint32 value = T_VEC3D; };
template <> struct grid_code<vec_t<4, float32>> { static constexpr uint32 value = T_VEC4F; };
template <> struct grid_code<vec_t<4, float64>> { static constexpr uint32 value = T_VEC4D; };

// The weights of trilinear interpolation are computed in double for double values, float otherwise.
template <typename S> struct weight_type { typedef float32 type; };
template <> struct weight_type<float64> { typedef float64 type; };

// The 8 values of the stencil at `b` (corner idx: x offset bit 2, y bit 1, z bit 0), one by one.
template <typename T, typename R>
WEFT_FN void read_corners(R& reader, const int32 b[3], T v[8]) {
    for (int32 idx = 0; idx < 8; ++idx) v[idx] = reader.read(b[0] + ((idx >> 2) & 1), b[1] + ((idx >> 1) & 1), b[2] + (idx & 1));
}

// Reads the values a volume stores itself (a grid of type T; other grids read as zero).
template <typename T>
struct stored_reader {
    accessor_t<grid_code<T>::value> acc;
    bool valid;
    WEFT_FN stored_reader(uint64 id) : acc(id), valid(grid_type(id) == grid_code<T>::value) {}
    WEFT_FN T read(int32 i, int32 j, int32 k) { return valid ? rd<T>(acc.find(i, j, k).value) : T{}; }
    WEFT_FN void adj_read(int32, int32, int32, const T&) {}
    // A stencil inside one leaf (2 in 3 random samples) reads its 8 values at fixed offsets.
    WEFT_FN void corners(const int32 b[3], T v[8]) {
        if (valid && (b[0] & 7) != 7 && (b[1] & 7) != 7 && (b[2] & 7) != 7) {
            hit_t h = acc.find(b[0], b[1], b[2]);
            if (h.level == 0) {
                constexpr uint32 offsets[8] = {0, 1, 8, 9, 64, 65, 72, 73};
                for (int32 idx = 0; idx < 8; ++idx) v[idx] = rd<T>(h.value + offsets[idx] * uint32(sizeof(T)));
                return;
            }
        }
        read_corners(*this, b, v);
    }
};

// Reads the values of an index grid (or a value grid's voxel order) from an array: voxel index
// v > 0 reads data[v - 1], anything else the background.
template <typename T>
struct index_reader {
    accessor_t<> acc;
    const array_t<T>& data;
    const T& background;
    T* adj_background;
    WEFT_FN index_reader(uint64 id, const array_t<T>& d, const T& bg, T* adj_bg = nullptr)
        : acc(id), data(d), background(bg), adj_background(adj_bg) {}
    WEFT_FN T* slot(T* base, int32 i, int32 j, int32 k) {
        hit_t h = acc.find(i, j, k);
        if (h.level != 0 || !base || acc.runtime_layout.leaf_kind == LEAF_NONE) return nullptr;
        uint64 v = voxel_index(acc.grid, acc.runtime_layout, h, i, j, k);
        if (v == 0 || int64(v - 1) >= int64(data.shape[0])) return nullptr;
        return reinterpret_cast<T*>(reinterpret_cast<char*>(base) + int64(v - 1) * data.strides[0]);
    }
    WEFT_FN T read(int32 i, int32 j, int32 k) {
        T* p = slot(data.data, i, j, k);
        return p ? *p : background;
    }
    WEFT_FN void corners(const int32 b[3], T v[8]) { read_corners(*this, b, v); }
    WEFT_FN void adj_read(int32 i, int32 j, int32 k, const T& adj) {
        T* p = slot(data.grad, i, j, k);
        if (p)
            atomic_add_raw(p, adj);
        else if (!slot(data.data, i, j, k) && adj_background)
            *adj_background += adj;
    }
};

WEFT_FN int32 round_coord(float32 x) { return int32(roundf(x)); }

// One corner of the trilinear stencil: its offset, weight and the weight's gradient and
// (off-diagonal) second derivatives.
template <typename W>
struct corner_t {
    int32 o[3];
    W w;
    W dw[3];
    W h[3][3];
};

template <typename W>
WEFT_FN corner_t<W> corner(int32 idx, const W f[3]) {
    corner_t<W> c;
    W wt[3][2], s[3];
    for (int d = 0; d < 3; ++d) {
        c.o[d] = (idx >> (2 - d)) & 1;
        wt[d][0] = W(1) - f[d];
        wt[d][1] = f[d];
        s[d] = c.o[d] ? W(1) : W(-1);
    }
    W a = wt[0][c.o[0]], b = wt[1][c.o[1]], e = wt[2][c.o[2]];
    c.w = a * b * e;
    c.dw[0] = s[0] * b * e;
    c.dw[1] = a * s[1] * e;
    c.dw[2] = a * b * s[2];
    W wd[3] = {a, b, e};
    for (int p = 0; p < 3; ++p)
        for (int q = 0; q < 3; ++q) c.h[p][q] = p == q ? W(0) : s[p] * s[q] * wd[3 - p - q];
    return c;
}

// The stencil of a sample: base voxel and fractions.
template <typename W>
WEFT_FN void stencil(const vec_t<3, float32>& uvw, int32 base[3], W f[3]) {
    for (int d = 0; d < 3; ++d) {
        float32 fl = floorf(uvw.c[d]);
        base[d] = int32(fl);
        f[d] = W(uvw.c[d] - fl);
    }
}

// value (and gradient when `grad` is given) of a sample; modes other than LINEAR are CLOSEST.
template <typename T, typename R>
WEFT_FN T sample(R& reader, const vec_t<3, float32>& uvw, int32 mode, typename value_traits<T>::grad_t* grad) {
    typedef value_traits<T> VT;
    typedef typename weight_type<typename VT::scalar>::type W;
    if (mode != 1) return reader.read(round_coord(uvw.c[0]), round_coord(uvw.c[1]), round_coord(uvw.c[2]));
    int32 base[3];
    W f[3], acc[VT::n > 0 ? VT::n : 1] = {};
    W gacc[VT::n][3] = {};
    stencil(uvw, base, f);
    T values[8];
    reader.corners(base, values);
    for (int32 idx = 0; idx < 8; ++idx) {
        corner_t<W> c = corner(idx, f);
        const T& v = values[idx];
        for (unsigned k = 0; k < VT::n; ++k) {
            W x = W(VT::at(v, k));
            acc[k] += c.w * x;
            for (int d = 0; d < 3; ++d) gacc[k][d] += c.dw[d] * x;
        }
    }
    T out{};
    for (unsigned k = 0; k < VT::n; ++k) {
        VT::at(out, k) = typename VT::scalar(acc[k]);
        if (grad)
            for (int d = 0; d < 3; ++d) VT::g(*grad, k, d) = typename VT::scalar(gacc[k][d]);
    }
    return out;
}

// Adjoint of sample (adj_grad: the gradient output's adjoint, or null).
template <typename T, typename R>
WEFT_FN void adj_sample(R& reader, const vec_t<3, float32>& uvw, int32 mode, vec_t<3, float32>& adj_uvw,
                        const T& adj_ret, const typename value_traits<T>::grad_t* adj_grad) {
    typedef value_traits<T> VT;
    typedef typename weight_type<typename VT::scalar>::type W;
    if (mode != 1) {
        reader.adj_read(round_coord(uvw.c[0]), round_coord(uvw.c[1]), round_coord(uvw.c[2]), adj_ret);
        return;
    }
    int32 base[3];
    W f[3], g[3] = {};
    stencil(uvw, base, f);
    T values[8];
    reader.corners(base, values);
    for (int32 idx = 0; idx < 8; ++idx) {
        corner_t<W> c = corner(idx, f);
        const T& v = values[idx];
        T adj_v{};
        W u[3] = {};
        for (unsigned m = 0; m < VT::n; ++m) {
            W x = W(VT::at(v, m)), a = W(VT::at(adj_ret, m)), av = c.w * a;
            for (int d = 0; d < 3; ++d) {
                g[d] += c.dw[d] * x * a;
                if (adj_grad) {
                    W ag = W(VT::g(*adj_grad, m, d));
                    u[d] += x * ag;
                    av += c.dw[d] * ag;
                }
            }
            VT::at(adj_v, m) = typename VT::scalar(av);
        }
        if (adj_grad)
            for (int e = 0; e < 3; ++e) g[e] += u[0] * c.h[0][e] + u[1] * c.h[1][e] + u[2] * c.h[2][e];
        reader.adj_read(base[0] + c.o[0], base[1] + c.o[1], base[2] + c.o[2], adj_v);
    }
    for (int d = 0; d < 3; ++d) adj_uvw.c[d] += float32(g[d]);
}

// The map's matrix (and translation) in float or double, as stored in the grid header.
template <typename S>
WEFT_FN S map_at(uint64 id, uint32 float_at, uint32 double_at, int32 n) {
    uint8* g = grid_of(id);
    if constexpr (sizeof(S) == 8)
        return rd<float64>(g + double_at + 8u * n);
    else
        return rd<float32>(g + float_at + 4u * n);
}

// y = A x (+ t): A the index-to-world matrix (inverse: world-to-index), transposed: A^T x.
template <typename S>
WEFT_FN vec_t<3, S> map_apply(uint64 id, bool inverse, bool transposed, const vec_t<3, S>& x, bool translate) {
    uint32 mf = inverse ? MAP_INVMATF : MAP_MATF, md = inverse ? MAP_INVMATD : MAP_MATD;
    vec_t<3, S> src = x, out;
    if (translate && inverse)
        for (int d = 0; d < 3; ++d) src.c[d] -= map_at<S>(id, MAP_VECF, MAP_VECD, d);
    for (int r = 0; r < 3; ++r) {
        S s = S(0);
        for (int c = 0; c < 3; ++c) s += src.c[c] * map_at<S>(id, mf, md, transposed ? c * 3 + r : r * 3 + c);
        out.c[r] = s;
    }
    if (translate && !inverse)
        for (int d = 0; d < 3; ++d) out.c[d] += map_at<S>(id, MAP_VECF, MAP_VECD, d);
    return out;
}

}  // namespace vdb

// ----------------------------------------------------------------------------- builtins

typedef vec_t<3, float32> vdb_vec3;

// wp.volume_sample(id, uvw, mode, dtype): dtype arrives as a zero value of the type (`tag`).
template <typename T>
WEFT_FN T volume_sample(uint64 id, const vdb_vec3& uvw, int32 mode, const T&) {
    vdb::stored_reader<T> r(id);
    return vdb::sample<T>(r, uvw, mode, nullptr);
}
template <typename T>
WEFT_FN void adj_volume_sample(uint64 id, const vdb_vec3& uvw, int32 mode, const T&, uint64&, vdb_vec3& adj_uvw,
                               int32&, T&, const T& adj_ret) {
    vdb::stored_reader<T> r(id);
    vdb::adj_sample<T>(r, uvw, mode, adj_uvw, adj_ret, nullptr);
}

WEFT_FN float32 volume_sample_f(uint64 id, const vdb_vec3& uvw, int32 mode) { return volume_sample(id, uvw, mode, float32(0)); }
WEFT_FN vdb_vec3 volume_sample_v(uint64 id, const vdb_vec3& uvw, int32 mode) { return volume_sample(id, uvw, mode, vdb_vec3()); }
WEFT_FN int32 volume_sample_i(uint64 id, const vdb_vec3& uvw) { return volume_sample(id, uvw, 0, int32(0)); }
WEFT_FN void adj_volume_sample_f(uint64 id, const vdb_vec3& uvw, int32 mode, uint64& a, vdb_vec3& adj_uvw, int32& m,
                                 const float32& adj_ret) {
    float32 tag = 0;
    adj_volume_sample(id, uvw, mode, float32(0), a, adj_uvw, m, tag, adj_ret);
}
WEFT_FN void adj_volume_sample_v(uint64 id, const vdb_vec3& uvw, int32 mode, uint64& a, vdb_vec3& adj_uvw, int32& m,
                                 const vdb_vec3& adj_ret) {
    vdb_vec3 tag;
    adj_volume_sample(id, uvw, mode, vdb_vec3(), a, adj_uvw, m, tag, adj_ret);
}

// wp.volume_sample_grad(id, uvw, mode, grad, dtype): (value, gradient); `grad` is rebound.
template <typename T>
using vdb_grad_t = typename vdb::value_traits<T>::grad_t;

template <typename T>
WEFT_FN tuple_t<T, vdb_grad_t<T>> volume_sample_grad(uint64 id, const vdb_vec3& uvw, int32 mode, const vdb_grad_t<T>&,
                                                     const T&) {
    vdb::stored_reader<T> r(id);
    vdb_grad_t<T> g;
    T v = vdb::sample<T>(r, uvw, mode, &g);
    return tuple_t<T, vdb_grad_t<T>>{v, {g, {}}};
}
template <typename T>
WEFT_FN void adj_volume_sample_grad(uint64 id, const vdb_vec3& uvw, int32 mode, const vdb_grad_t<T>&, const T&,
                                    uint64&, vdb_vec3& adj_uvw, int32&, vdb_grad_t<T>&, T&,
                                    const tuple_t<T, vdb_grad_t<T>>& adj_ret) {
    vdb::stored_reader<T> r(id);
    vdb::adj_sample<T>(r, uvw, mode, adj_uvw, adj_ret.head, mode == 1 ? &adj_ret.tail.head : nullptr);
}
WEFT_FN tuple_t<float32, vdb_vec3> volume_sample_grad_f(uint64 id, const vdb_vec3& uvw, int32 mode, const vdb_vec3& g) {
    return volume_sample_grad(id, uvw, mode, g, float32(0));
}
WEFT_FN void adj_volume_sample_grad_f(uint64 id, const vdb_vec3& uvw, int32 mode, const vdb_vec3& g, uint64& a,
                                      vdb_vec3& adj_uvw, int32& m, vdb_vec3& adj_g,
                                      const tuple_t<float32, vdb_vec3>& adj_ret) {
    float32 tag = 0;
    adj_volume_sample_grad(id, uvw, mode, g, float32(0), a, adj_uvw, m, adj_g, tag, adj_ret);
}

// wp.volume_sample_index(id, uvw, mode, voxel_data, background) and its _grad_ form.
template <typename T>
WEFT_FN T volume_sample_index(uint64 id, const vdb_vec3& uvw, int32 mode, const array_t<T>& data, const T& bg) {
    vdb::index_reader<T> r(id, data, bg);
    return vdb::sample<T>(r, uvw, mode, nullptr);
}
template <typename T>
WEFT_FN void adj_volume_sample_index(uint64 id, const vdb_vec3& uvw, int32 mode, const array_t<T>& data, const T& bg,
                                     uint64&, vdb_vec3& adj_uvw, int32&, array_t<T>&, T& adj_bg, const T& adj_ret) {
    vdb::index_reader<T> r(id, data, bg, &adj_bg);
    vdb::adj_sample<T>(r, uvw, mode, adj_uvw, adj_ret, nullptr);
}
template <typename T>
WEFT_FN tuple_t<T, vdb_grad_t<T>> volume_sample_grad_index(uint64 id, const vdb_vec3& uvw, int32 mode,
                                                           const array_t<T>& data, const T& bg, const vdb_grad_t<T>&) {
    vdb::index_reader<T> r(id, data, bg);
    vdb_grad_t<T> g;
    T v = vdb::sample<T>(r, uvw, mode, &g);
    return tuple_t<T, vdb_grad_t<T>>{v, {g, {}}};
}
template <typename T>
WEFT_FN void adj_volume_sample_grad_index(uint64 id, const vdb_vec3& uvw, int32 mode, const array_t<T>& data,
                                          const T& bg, const vdb_grad_t<T>&, uint64&, vdb_vec3& adj_uvw, int32&,
                                          array_t<T>&, T& adj_bg, vdb_grad_t<T>&,
                                          const tuple_t<T, vdb_grad_t<T>>& adj_ret) {
    vdb::index_reader<T> r(id, data, bg, &adj_bg);
    vdb::adj_sample<T>(r, uvw, mode, adj_uvw, adj_ret.head, mode == 1 ? &adj_ret.tail.head : nullptr);
}

// wp.volume_lookup(id, i, j, k, dtype) / _f / _v / _i: the value a coordinate resolves to.
template <typename T>
WEFT_FN T volume_lookup(uint64 id, int32 i, int32 j, int32 k, const T&) {
    vdb::stored_reader<T> r(id);
    return r.read(i, j, k);
}
WEFT_FN float32 volume_lookup_f(uint64 id, int32 i, int32 j, int32 k) { return volume_lookup(id, i, j, k, float32(0)); }
WEFT_FN vdb_vec3 volume_lookup_v(uint64 id, int32 i, int32 j, int32 k) { return volume_lookup(id, i, j, k, vdb_vec3()); }
WEFT_FN int32 volume_lookup_i(uint64 id, int32 i, int32 j, int32 k) { return volume_lookup(id, i, j, k, int32(0)); }

// wp.volume_store(id, i, j, k, value) / _f / _v / _i: writes leaf values only (no allocation,
// no activation, never the background or a tile); a grid of another type is left alone.
template <typename T>
WEFT_FN void volume_store(uint64 id, int32 i, int32 j, int32 k, const T& value) {
    if (vdb::grid_type(id) != vdb::grid_code<T>::value) return;
    vdb::hit_t h = vdb::find(vdb::grid_of(id), vdb::layout_of(vdb::grid_type(id)), i, j, k);
    if (h.level == 0) *reinterpret_cast<T*>(h.value) = value;
}
WEFT_FN void volume_store_f(uint64 id, int32 i, int32 j, int32 k, float32 v) { volume_store(id, i, j, k, v); }
WEFT_FN void volume_store_v(uint64 id, int32 i, int32 j, int32 k, const vdb_vec3& v) { volume_store(id, i, j, k, v); }
WEFT_FN void volume_store_i(uint64 id, int32 i, int32 j, int32 k, int32 v) { volume_store(id, i, j, k, v); }

// wp.volume_lookup_index(id, i, j, k): the voxel's index (get_voxels order), -1 when it has none.
WEFT_FN int32 volume_lookup_index(uint64 id, int32 i, int32 j, int32 k) {
    uint8* g = vdb::grid_of(id);
    vdb::layout_t L = vdb::layout_of(vdb::grid_type(id));
    vdb::hit_t h = vdb::find(g, L, i, j, k);
    if (h.level != 0 || L.leaf_kind == vdb::LEAF_NONE) return -1;
    return int32(int64(vdb::voxel_index(g, L, h, i, j, k)) - 1);
}

// wp.volume_voxel_count(id): indexable voxels (active ones for OnIndex grids, 512 per leaf
// otherwise), clamped to the int32 range.
WEFT_FN int32 volume_voxel_count(uint64 id) {
    uint8* tree = vdb::tree_of(vdb::grid_of(id));
    uint32 type = vdb::grid_type(id);
    uint64 n = (type == vdb::T_ONINDEX || type == vdb::T_ONINDEXMASK) ? vdb::rd<uint64>(tree + 56)
                                                                      : uint64(vdb::rd<uint32>(tree + 32)) * 512u;
    return n > 2147483647ull ? 2147483647 : int32(n);
}

// Index <-> world transforms of points and directions, float and double.
#define WEFT_VDB_TRANSFORM(name, inverse, translate)                                                           \
    template <typename S>                                                                                      \
    WEFT_FN vec_t<3, S> name(uint64 id, const vec_t<3, S>& x) {                                                \
        return vdb::map_apply<S>(id, inverse, false, x, translate);                                            \
    }                                                                                                          \
    template <typename S>                                                                                      \
    WEFT_FN void adj_##name(uint64 id, const vec_t<3, S>&, uint64&, vec_t<3, S>& adj_x, const vec_t<3, S>& adj_ret) { \
        vec_t<3, S> g = vdb::map_apply<S>(id, inverse, true, adj_ret, false);                                  \
        for (int d = 0; d < 3; ++d) adj_x.c[d] += g.c[d];                                                      \
    }
WEFT_VDB_TRANSFORM(volume_index_to_world, false, true)
WEFT_VDB_TRANSFORM(volume_world_to_index, true, true)
WEFT_VDB_TRANSFORM(volume_index_to_world_dir, false, false)
WEFT_VDB_TRANSFORM(volume_world_to_index_dir, true, false)
#undef WEFT_VDB_TRANSFORM

}  // namespace weft
