// Host-side construction of weft's BVHs (weft.geometry.Bvh and the face BVH of weft.geometry.Mesh):
// a top-down build over item bounds (binned surface-area heuristic, or median splits), one subtree
// per group under a tree of group roots, refits, the per-node data of the fast winding number, and
// the 4-wide copy of a mesh's tree its CPU rays walk (weft_bvh_widen, refitted with the tree).
// Loaded with ctypes by weft/geometry/native.py; the node layout is bvh_node_t of bvh.h.
//
// Nodes are numbered as they are made; `order` (children before parents) drives the winding
// data. Large ranges build (and refit) their two halves on two threads.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#define WEFT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Node {
    float lo[3];
    int a;
    float hi[3];
    int b;
};

struct Ref {  // an item's bounds; its centre is kept doubled (lo + hi), 28 bytes a ref
    float lo[3], hi[3];
    int id;
    float c(int k) const { return lo[k] + hi[k]; }
};

struct Box {
    float lo[3] = {INFINITY, INFINITY, INFINITY};
    float hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    void grow(const float* l, const float* h) {
        for (int k = 0; k < 3; ++k) {
            lo[k] = std::min(lo[k], l[k]);
            hi[k] = std::max(hi[k], h[k]);
        }
    }
    void grow_point(const float* p) { grow(p, p); }
    float area() const {
        float d[3];
        for (int k = 0; k < 3; ++k) d[k] = std::max(hi[k] - lo[k], 0.0f);
        return d[0] * d[1] + d[1] * d[2] + d[2] * d[0];
    }
};

const int MAX_DEPTH = 56;  // traversal stacks hold 64 nodes (bvh.h)
const int BINS = 16;
const int PARALLEL_RANGE = 16384;

struct Builder {
    Ref* refs;
    Node* nodes;
    int leaf_size;
    bool median;
    std::atomic<int> next{0};

    int alloc() { return next.fetch_add(1); }

    void set_leaf(int ni, const Box& box, int begin, int end) {
        Node& n = nodes[ni];
        std::memcpy(n.lo, box.lo, sizeof n.lo);
        std::memcpy(n.hi, box.hi, sizeof n.hi);
        n.a = begin;
        n.b = -(end - begin);
    }

    // Where to split refs[begin, end) (its centroids span cbox): returns the first index of the
    // right half. Small ranges and coincident centroids split at the median.
    // When the split comes from the bins, *known is set and the children's item and centroid
    // bounds are returned in boxes[0..3] (left box, left centroids, right box, right centroids).
    int split(int begin, int end, const Box& cbox, Box* boxes, bool* known) {
        *known = false;
        int axis = 0;
        float ext[3];
        for (int k = 0; k < 3; ++k) ext[k] = cbox.hi[k] - cbox.lo[k];
        if (ext[1] > ext[axis]) axis = 1;
        if (ext[2] > ext[axis]) axis = 2;
        int mid = begin + (end - begin) / 2;
        if (!(ext[axis] > 0.0f)) return mid;  // all centroids coincide: split by count
        if (median || end - begin <= 12) {
            std::nth_element(refs + begin, refs + mid, refs + end, [axis](const Ref& x, const Ref& y) { return x.c(axis) < y.c(axis); });
            return mid;
        }
        // binned SAH along the axis of largest centroid extent (binning all three axes cost
        // three times the build time for rays about 2% faster on the benchmark mesh)
        Box bins[3][BINS];
        int counts[3][BINS] = {{0}};
        float scale[3];
        for (int k = 0; k < 3; ++k) scale[k] = ext[k] > 0.0f ? BINS / ext[k] : 0.0f;
        Box cbins[BINS];
        {
            const int k = axis;
            auto bin_range = [&](int lo_i, int hi_i, Box* b, Box* cb, int* cnt) {
                for (int i = lo_i; i < hi_i; ++i) {
                    const Ref& r = refs[i];
                    int bin = std::min(BINS - 1, int((r.c(k) - cbox.lo[k]) * scale[k]));
                    b[bin].grow(r.lo, r.hi);
                    float rc[3] = {r.c(0), r.c(1), r.c(2)};
                    cb[bin].grow_point(rc);
                    cnt[bin]++;
                }
            };
            if (end - begin > 4 * PARALLEL_RANGE) {  // the top splits: bin the two halves side by side
                int half = begin + (end - begin) / 2;
                Box b2[BINS], cb2[BINS];
                int cnt2[BINS] = {0};
                std::thread t([&] { bin_range(half, end, b2, cb2, cnt2); });
                bin_range(begin, half, bins[k], cbins, counts[k]);
                t.join();
                for (int b = 0; b < BINS; ++b) {
                    if (!cnt2[b]) continue;
                    bins[k][b].grow(b2[b].lo, b2[b].hi);
                    cbins[b].grow(cb2[b].lo, cb2[b].hi);
                    counts[k][b] += cnt2[b];
                }
            } else {
                bin_range(begin, end, bins[k], cbins, counts[k]);
            }
        }
        float best_cost = INFINITY;
        int best_axis = -1, best_bin = 0;
        for (int k = axis; k == axis; ++k) {
            if (!(ext[k] > 0.0f)) continue;
            float right_area[BINS];
            int right_count[BINS];
            Box acc;
            int cnt = 0;
            for (int b = BINS - 1; b > 0; --b) {
                if (counts[k][b]) acc.grow(bins[k][b].lo, bins[k][b].hi);
                cnt += counts[k][b];
                right_area[b] = acc.area();
                right_count[b] = cnt;
            }
            Box left;
            int lcnt = 0;
            for (int b = 0; b < BINS - 1; ++b) {
                if (counts[k][b]) left.grow(bins[k][b].lo, bins[k][b].hi);
                lcnt += counts[k][b];
                if (lcnt == 0 || right_count[b + 1] == 0) continue;
                float cost = left.area() * lcnt + right_area[b + 1] * right_count[b + 1];
                if (cost < best_cost) best_cost = cost, best_axis = k, best_bin = b;
            }
        }
        if (best_axis < 0) return mid;
        float sc = scale[best_axis];
        float lo = cbox.lo[best_axis];
        Ref* p = std::partition(refs + begin, refs + end, [&](const Ref& r) {
            return std::min(BINS - 1, int((r.c(best_axis) - lo) * sc)) <= best_bin;
        });
        int m = int(p - refs);
        if (m == begin || m == end) return mid;
        for (int b = 0; b < BINS; ++b) {
            if (!counts[best_axis][b]) continue;
            int side = b <= best_bin ? 0 : 2;
            boxes[side].grow(bins[best_axis][b].lo, bins[best_axis][b].hi);
            boxes[side + 1].grow(cbins[b].lo, cbins[b].hi);
        }
        *known = true;
        return m;
    }

    void bounds(int begin, int end, Box& box, Box& cbox) {
        for (int i = begin; i < end; ++i) {
            box.grow(refs[i].lo, refs[i].hi);
            float rc[3] = {refs[i].c(0), refs[i].c(1), refs[i].c(2)};
            cbox.grow_point(rc);
        }
    }

    // Node ni over refs[begin, end), whose item and centroid bounds are box and cbox.
    void build(int ni, int begin, int end, int depth, Box box, Box cbox) {
        if (end - begin <= leaf_size || depth >= MAX_DEPTH) {
            set_leaf(ni, box, begin, end);
            return;
        }
        Box boxes[4];
        bool known;
        int m = split(begin, end, cbox, boxes, &known);
        if (!known) {
            bounds(begin, m, boxes[0], boxes[1]);
            bounds(m, end, boxes[2], boxes[3]);
        }
        Node& n = nodes[ni];
        std::memcpy(n.lo, box.lo, sizeof n.lo);
        std::memcpy(n.hi, box.hi, sizeof n.hi);
        int left = alloc(), right = alloc();
        n.a = left;
        n.b = right;
        if (end - begin > PARALLEL_RANGE && depth < 3) {
            std::thread t([=] { build(left, begin, m, depth + 1, boxes[0], boxes[1]); });
            build(right, m, end, depth + 1, boxes[2], boxes[3]);
            t.join();
        } else {
            build(left, begin, m, depth + 1, boxes[0], boxes[1]);
            build(right, m, end, depth + 1, boxes[2], boxes[3]);
        }
    }

    void build_range(int ni, int begin, int end, int depth) {
        Box box, cbox;
        bounds(begin, end, box, cbox);
        build(ni, begin, end, depth, box, cbox);
    }

    // A tree over existing subtree roots (the groups): median splits on their centres.
    int build_top(std::vector<int>& roots, int begin, int end) {
        if (end - begin == 1) return roots[begin];
        Box box, cbox;
        for (int i = begin; i < end; ++i) {
            const Node& r = nodes[roots[i]];
            box.grow(r.lo, r.hi);
            float c[3] = {0.5f * (r.lo[0] + r.hi[0]), 0.5f * (r.lo[1] + r.hi[1]), 0.5f * (r.lo[2] + r.hi[2])};
            cbox.grow_point(c);
        }
        int axis = 0;
        for (int k = 1; k < 3; ++k)
            if (cbox.hi[k] - cbox.lo[k] > cbox.hi[axis] - cbox.lo[axis]) axis = k;
        int mid = begin + (end - begin) / 2;
        Node* ns = nodes;
        std::nth_element(roots.begin() + begin, roots.begin() + mid, roots.begin() + end,
                         [ns, axis](int x, int y) { return ns[x].lo[axis] + ns[x].hi[axis] < ns[y].lo[axis] + ns[y].hi[axis]; });
        int ni = alloc();
        int left = build_top(roots, begin, mid), right = build_top(roots, mid, end);
        Node& n = nodes[ni];
        std::memcpy(n.lo, box.lo, sizeof n.lo);
        std::memcpy(n.hi, box.hi, sizeof n.hi);
        n.a = left;
        n.b = right;
        return ni;
    }
};

// Children before parents: the reverse of a breadth-first walk from the root.
int refit_order(const Node* nodes, int root, int* order) {
    int count = 0;
    order[count++] = root;
    for (int i = 0; i < count; ++i) {
        const Node& n = nodes[order[i]];
        if (n.b >= 0) {
            order[count++] = n.a;
            order[count++] = n.b;
        }
    }
    std::reverse(order, order + count);
    return count;
}

}  // namespace

// Build over n items with bounds lowers/uppers (n x 3 floats). groups: null, or any int32 group
// id per item; group_ids / group_roots (room for n) receive the distinct ids in increasing order
// and each one's subtree root, *num_groups their count. constructor: 0 SAH, 1 median.
// nodes: room for 2n nodes; prims, order: room for n, 2n.
// Returns the node count; *root receives the root (-1 when n == 0).
WEFT_EXPORT int weft_bvh_build(const float* lowers, const float* uppers, int n, const int* groups, int leaf_size, int constructor,
                               Node* nodes, int* prims, int* group_ids, int* group_roots, int* num_groups, int* order,
                               int* order_count, int* root) {
    *root = -1;
    *order_count = 0;
    *num_groups = 0;
    if (n <= 0) return 0;
    std::vector<Ref> refs(n);
    // the refs and their item and centroid bounds, in two halves side by side for large builds
    auto init = [&](int lo_i, int hi_i, Box* box, Box* cbox) {
        for (int i = lo_i; i < hi_i; ++i) {
            Ref& r = refs[i];
            for (int k = 0; k < 3; ++k) {
                r.lo[k] = lowers[3 * i + k];
                r.hi[k] = uppers[3 * i + k];
            }
            r.id = i;
            box->grow(r.lo, r.hi);
            float rc[3] = {r.c(0), r.c(1), r.c(2)};
            cbox->grow_point(rc);
        }
    };
    Box boxes[4];
    if (n > 4 * PARALLEL_RANGE) {
        std::thread t([&] { init(n / 2, n, &boxes[2], &boxes[3]); });
        init(0, n / 2, &boxes[0], &boxes[1]);
        t.join();
        boxes[0].grow(boxes[2].lo, boxes[2].hi);
        boxes[1].grow(boxes[3].lo, boxes[3].hi);
    } else {
        init(0, n, &boxes[0], &boxes[1]);
    }
    Builder b;
    b.refs = refs.data();
    b.nodes = nodes;
    b.leaf_size = std::max(1, leaf_size);
    b.median = constructor == 1;
    if (!groups) {
        *root = b.alloc();
        b.build(*root, 0, n, 0, boxes[0], boxes[1]);
    } else {
        std::stable_sort(refs.begin(), refs.end(), [groups](const Ref& x, const Ref& y) { return groups[x.id] < groups[y.id]; });
        std::vector<int> roots;
        int distinct = 1;
        for (int i = 1; i < n; ++i) distinct += groups[refs[i].id] != groups[refs[i - 1].id];
        int top_depth = 1;
        while ((1 << top_depth) < distinct) ++top_depth;
        for (int begin = 0; begin < n;) {
            int g = groups[refs[begin].id], end = begin;
            while (end < n && groups[refs[end].id] == g) ++end;
            int ni = b.alloc();
            b.build_range(ni, begin, end, top_depth + 1);
            group_ids[*num_groups] = g;
            group_roots[*num_groups] = ni;
            ++*num_groups;
            roots.push_back(ni);
            begin = end;
        }
        *root = b.build_top(roots, 0, int(roots.size()));
    }
    for (int i = 0; i < n; ++i) prims[i] = refs[i].id;
    *order_count = refit_order(nodes, *root, order);
    return b.next.load();
}

namespace {

struct Node4 {  // bvh4_node_t of bvh.h
    float lo[3][4];
    float hi[3][4];
    int child[4];
    int count[4];
};

// Where a refit writes the boxes of the 4-wide tree too (null nodes: no wide tree): binary node
// ni's box is slot slot_of[ni] % 4 of wide node slot_of[ni] / 4 (-1: no slot).
struct WideTarget {
    Node4* nodes;
    const int* slot_of;
    void write(int ni, const Box& box) const {
        if (!nodes || slot_of[ni] < 0) return;
        Node4& w = nodes[slot_of[ni] >> 2];
        int k = slot_of[ni] & 3;
        for (int axis = 0; axis < 3; ++axis) {
            w.lo[axis][k] = box.lo[axis];
            w.hi[axis][k] = box.hi[axis];
        }
    }
};

// Bounds of node ni's subtree, post-order; leaf_bounds(k, box) grows box by the item in leaf
// slot k. The two halves of the top levels of a large tree (depth < 2) run on two threads.
template <typename LeafBounds>
void refit_node(Node* nodes, int ni, const LeafBounds& leaf_bounds, const WideTarget& wide, int depth) {
    Node& n = nodes[ni];
    Box box;
    if (n.b < 0) {
        for (int k = n.a; k < n.a - n.b; ++k) leaf_bounds(k, box);
    } else {
        if (depth < 2) {
            std::thread t([&] { refit_node(nodes, n.a, leaf_bounds, wide, depth + 1); });
            refit_node(nodes, n.b, leaf_bounds, wide, depth + 1);
            t.join();
        } else {
            refit_node(nodes, n.a, leaf_bounds, wide, depth + 1);
            refit_node(nodes, n.b, leaf_bounds, wide, depth + 1);
        }
        box.grow(nodes[n.a].lo, nodes[n.a].hi);
        box.grow(nodes[n.b].lo, nodes[n.b].hi);
    }
    std::memcpy(n.lo, box.lo, sizeof n.lo);
    std::memcpy(n.hi, box.hi, sizeof n.hi);
    wide.write(ni, box);
}

}  // namespace

// Node bounds from the items' bounds (the tree keeps its shape), and those of the 4-wide tree
// (wide, slot_of: see WideTarget; null without one). Large trees (num_items above a few
// thousand) refit their top halves on two threads.
WEFT_EXPORT void weft_bvh_refit(Node* nodes, int root, int num_items, const int* prims, const float* lowers, const float* uppers,
                                Node4* wide, const int* slot_of) {
    if (root < 0) return;
    auto leaf_bounds = [=](int k, Box& box) { box.grow(lowers + 3 * prims[k], uppers + 3 * prims[k]); };
    refit_node(nodes, root, leaf_bounds, WideTarget{wide, slot_of}, num_items > PARALLEL_RANGE ? 0 : 2);
}

// A mesh's face BVH refit from its vertices in one pass (no face boxes written or read). prims
// null: indices are in leaf order (weft_mesh_leaf_triangles).
WEFT_EXPORT void weft_mesh_refit(Node* nodes, int root, int num_tris, const int* prims, const float* points, const int* indices,
                                 Node4* wide, const int* slot_of) {
    if (root < 0) return;
    auto leaf_bounds = [=](int k, Box& box) {
        const int* t = indices + 3 * (prims ? prims[k] : k);
        box.grow_point(points + 3 * t[0]);
        box.grow_point(points + 3 * t[1]);
        box.grow_point(points + 3 * t[2]);
    };
    refit_node(nodes, root, leaf_bounds, WideTarget{wide, slot_of}, num_tris > PARALLEL_RANGE ? 0 : 2);
}

namespace {

float node_area(const Node& n) {
    float d[3];
    for (int k = 0; k < 3; ++k) d[k] = std::max(n.hi[k] - n.lo[k], 0.0f);
    return d[0] * d[1] + d[1] * d[2] + d[2] * d[0];
}

// The slots of the wide node standing for binary node bi: bi's descendants, each inner one
// replaced by its two children (the largest first) until there are four or only leaves.
int wide_slots(const Node* nodes, int bi, int* slots) {
    int n = 1;
    slots[0] = bi;
    float area[4] = {nodes[bi].b >= 0 ? node_area(nodes[bi]) : -1.0f};  // -1: a leaf
    while (n < 4) {
        int pick = -1;
        for (int k = 0; k < n; ++k)
            if (area[k] >= 0.0f && (pick < 0 || area[k] > area[pick])) pick = k;
        if (pick < 0) break;
        const Node& p = nodes[slots[pick]];
        slots[pick] = p.a;
        slots[n] = p.b;
        area[pick] = nodes[p.a].b >= 0 ? node_area(nodes[p.a]) : -1.0f;
        area[n++] = nodes[p.b].b >= 0 ? node_area(nodes[p.b]) : -1.0f;
    }
    return n;
}

// Wide node wi for binary node bi, then its inner slots' subtrees (depth first); slot_of[c] =
// 4 wi + k for the binary node c in slot k (what the refit writes its box to).
void widen(const Node* nodes, int bi, Node4* out, int* slot_of, int& next) {
    int wi = next++;
    int slots[4];
    int n = wide_slots(nodes, bi, slots);
    Node4& w = out[wi];
    for (int k = 0; k < 4; ++k) {
        const Node* c = k < n ? &nodes[slots[k]] : nullptr;
        for (int axis = 0; axis < 3; ++axis) {
            w.lo[axis][k] = c ? c->lo[axis] : INFINITY;
            w.hi[axis][k] = c ? c->hi[axis] : -INFINITY;
        }
        w.child[k] = c && c->b < 0 ? c->a : -1;
        w.count[k] = c ? (c->b < 0 ? -c->b : 0) : -1;
        if (c) slot_of[slots[k]] = 4 * wi + k;
    }
    for (int k = 0; k < n; ++k) {
        if (nodes[slots[k]].b < 0) continue;
        out[wi].child[k] = next;
        widen(nodes, slots[k], out, slot_of, next);
    }
}

}  // namespace

// The 4-wide tree (bvh.h bvh4_node_t) of the binary tree at root, node 0 its root, into out, and
// slot_of (one per binary node, filled with -1 by the caller): each node's slot, 4 wi + k. Room
// for one wide node per inner binary node (plus one) is enough, as every wide node stands for
// at least one of them. Returns the node count.
WEFT_EXPORT int weft_bvh_widen(const Node* nodes, int root, Node4* out, int* slot_of) {
    if (root < 0) return 0;
    int next = 0;
    widen(nodes, root, out, slot_of, next);
    return next;
}

// A mesh's faces' vertex indices in leaf order: out[3 k + j] = indices[3 prims[k] + j] for the
// n leaf slots k. The refit (and the CPU rays) read them in one sequential sweep instead of
// through prims. Two threads for large meshes.
WEFT_EXPORT void weft_mesh_leaf_triangles(const int* prims, int n, const int* indices, int* out) {
    auto part = [=](int k0, int k1) {
        for (int k = k0; k < k1; ++k) std::memcpy(out + 3 * k, indices + 3 * prims[k], 3 * sizeof(int));
    };
    if (n > PARALLEL_RANGE) {
        std::thread t(part, 0, n / 2);
        part(n / 2, n);
        t.join();
    } else {
        part(0, n);
    }
}

// Triangle bounds of a mesh (points: num_points x 3, indices: num_tris x 3); with with_edges,
// returns the mean edge length (each face's three edges), else 0. Two threads for large meshes.
WEFT_EXPORT double weft_mesh_bounds(const float* points, const int* indices, int num_tris, float* lowers, float* uppers, int with_edges) {
    auto part = [=](int f0, int f1, double* edge_sum) {
        double sum = 0.0;
        for (int f = f0; f < f1; ++f) {
            Box box;
            const float* p[3];
            for (int j = 0; j < 3; ++j) {
                p[j] = points + 3 * indices[3 * f + j];
                box.grow_point(p[j]);
            }
            if (with_edges) {
                for (int j = 0; j < 3; ++j) {
                    const float *x = p[j], *y = p[(j + 1) % 3];
                    float dx = y[0] - x[0], dy = y[1] - x[1], dz = y[2] - x[2];
                    sum += std::sqrt(dx * dx + dy * dy + dz * dz);
                }
            }
            std::memcpy(lowers + 3 * f, box.lo, sizeof box.lo);
            std::memcpy(uppers + 3 * f, box.hi, sizeof box.hi);
        }
        *edge_sum = sum;
    };
    double s0 = 0.0, s1 = 0.0;
    int mid = num_tris / 2;
    if (num_tris > PARALLEL_RANGE) {
        std::thread t(part, 0, mid, &s0);
        part(mid, num_tris, &s1);
        t.join();
    } else {
        part(0, num_tris, &s0);
    }
    return num_tris > 0 ? (s0 + s1) / (3.0 * num_tris) : 0.0;
}

// Per node: the area-weighted centre and normal sum of its triangles, and the radius of a ball
// around that centre holding the node's box (the fast winding number's far-field test).
WEFT_EXPORT void weft_mesh_winding_data(const Node* nodes, const int* order, int order_count, const int* prims, const float* points,
                                        const int* indices, float* centers, float* normals, float* radii, float* areas) {
    for (int i = 0; i < order_count; ++i) {
        int ni = order[i];
        const Node& n = nodes[ni];
        double c[3] = {0, 0, 0}, nn[3] = {0, 0, 0}, area = 0;
        auto add = [&](const float* cc, const float* nv, double a) {
            for (int k = 0; k < 3; ++k) {
                c[k] += cc[k] * a;
                nn[k] += nv[k];
            }
            area += a;
        };
        if (n.b < 0) {
            for (int k = n.a; k < n.a - n.b; ++k) {
                const int* t = indices + 3 * prims[k];
                const float *p0 = points + 3 * t[0], *p1 = points + 3 * t[1], *p2 = points + 3 * t[2];
                float e0[3], e1[3], cr[3], cc[3];
                for (int j = 0; j < 3; ++j) e0[j] = p1[j] - p0[j], e1[j] = p2[j] - p0[j], cc[j] = (p0[j] + p1[j] + p2[j]) / 3.0f;
                cr[0] = 0.5f * (e0[1] * e1[2] - e0[2] * e1[1]);
                cr[1] = 0.5f * (e0[2] * e1[0] - e0[0] * e1[2]);
                cr[2] = 0.5f * (e0[0] * e1[1] - e0[1] * e1[0]);
                add(cc, cr, std::sqrt(double(cr[0]) * cr[0] + double(cr[1]) * cr[1] + double(cr[2]) * cr[2]));
            }
        } else {
            for (int child : {n.a, n.b}) {
                float cc[3] = {centers[3 * child], centers[3 * child + 1], centers[3 * child + 2]};
                add(cc, normals + 3 * child, areas[child]);
            }
        }
        for (int k = 0; k < 3; ++k) {
            double ck = area > 0 ? c[k] / area : 0.5 * (n.lo[k] + n.hi[k]);
            centers[3 * ni + k] = float(ck);
            normals[3 * ni + k] = float(nn[k]);
        }
        areas[ni] = float(area);
        double r2 = 0;
        for (int corner = 0; corner < 8; ++corner) {
            double d2 = 0;
            for (int k = 0; k < 3; ++k) {
                double x = (corner >> k) & 1 ? n.hi[k] : n.lo[k];
                d2 += (x - centers[3 * ni + k]) * (x - centers[3 * ni + k]);
            }
            r2 = std::max(r2, d2);
        }
        radii[ni] = float(std::sqrt(r2));
    }
}
