// wp.fabricarray / wp.indexedfabricarray: arrays whose elements lie in several separately
// allocated buckets (Omniverse Fabric's attribute storage). A bucket covers the global indices
// [index_start, index_end); element i is found by a binary search over the buckets. For arrays of
// arrays (ndim 2), a bucket holds one pointer per element and `lengths` one inner length each.
//
// Kernels never index these descriptors directly: the frontend turns a[i] into a one-element
// array_t view of the element (fabric_element) or, for arrays of arrays, into the inner array
// (fabric_row), and loads, stores and atomics then go through array.h like any array's. The views
// carry no gradient buffer: Fabric data takes no gradients, as in Warp.
#pragma once
#include "core.h"
#include "array.h"

namespace weft {

struct fabricbucket_t {
    uint64 index_start;
    uint64 index_end;
    void* ptr;
    uint64* lengths;
};

template <typename T>
struct fabricarray_t {
    fabricbucket_t* buckets;  // on the array's device
    uint64 nbuckets;
    uint64 size;
};

template <typename T>
struct indexedfabricarray_t {
    fabricarray_t<T> fa;
    int32* indices;  // on the array's device
    uint64 size;
};

// An index checked against `size` (negative ones count from the end, as for arrays); the error
// names the Fabric array's own shape.
template <typename T>
WEFT_FN uint64 fabric_checked(uint64 size, int32 loc, int64 i) {
    if (i < 0) i += int64(size);
#ifndef WEFT_RELEASE
    if (i < 0 || uint64(i) >= size) {
        array_t<T> shape_only = {};
        shape_only.shape[0] = int32(size);
        shape_only.ndim = 1;
        int64 idx[1] = {i};
        raise_index_error(shape_only, loc, 0, idx, 1);
    }
#endif
    return uint64(i);
}

// The bucket holding global index i (in range: the caller checked it).
template <typename T>
WEFT_FN const fabricbucket_t& fabric_bucket(const fabricarray_t<T>& a, uint64 i) {
    uint64 lo = 0, hi = a.nbuckets;
    while (hi - lo > 1) {  // invariant: buckets[lo].index_start <= i < buckets[hi - 1].index_end
        uint64 mid = (lo + hi) / 2;
        if (i < a.buckets[mid].index_start)
            hi = mid;
        else
            lo = mid;
    }
    return a.buckets[lo];
}

template <typename T>
WEFT_FN array_t<T> fabric_one(T* p) {
    array_t<T> v = {};
    v.data = p;
    v.shape[0] = 1;
    v.strides[0] = int64(sizeof(T));
    v.ndim = 1;
    return v;
}

template <typename T>
WEFT_FN T* fabric_address(const fabricarray_t<T>& a, uint64 i) {
    const fabricbucket_t& b = fabric_bucket(a, i);
    return (T*)b.ptr + (i - b.index_start);
}

template <typename T>
WEFT_FN array_t<T> fabric_inner(const fabricarray_t<T>& a, uint64 i) {
    const fabricbucket_t& b = fabric_bucket(a, i);
    uint64 k = i - b.index_start;
    array_t<T> v = {};
    v.data = ((T**)b.ptr)[k];
    v.shape[0] = int32(b.lengths[k]);
    v.strides[0] = int64(sizeof(T));
    v.ndim = 1;
    return v;
}

// a[i] of a Fabric array: a one-element view of element i (index 0 of it is the element).
template <typename T, typename I>
WEFT_FN array_t<T> fabric_element(const fabricarray_t<T>& a, int32 loc, I i) {
    return fabric_one(fabric_address(a, fabric_checked<T>(a.size, loc, int64(i))));
}
template <typename T, typename I>
WEFT_FN array_t<T> fabric_element(const indexedfabricarray_t<T>& a, int32 loc, I i) {
    uint64 k = fabric_checked<T>(a.size, loc, int64(i));
    return fabric_one(fabric_address(a.fa, fabric_checked<T>(a.fa.size, loc, int64(a.indices[k]))));
}

// a[i] of a Fabric array of arrays: inner array i.
template <typename T, typename I>
WEFT_FN array_t<T> fabric_row(const fabricarray_t<T>& a, int32 loc, I i) {
    return fabric_inner(a, fabric_checked<T>(a.size, loc, int64(i)));
}
template <typename T, typename I>
WEFT_FN array_t<T> fabric_row(const indexedfabricarray_t<T>& a, int32 loc, I i) {
    uint64 k = fabric_checked<T>(a.size, loc, int64(i));
    return fabric_inner(a.fa, fabric_checked<T>(a.fa.size, loc, int64(a.indices[k])));
}

}  // namespace weft
