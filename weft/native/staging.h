// Staged task loops (CPU): the backward pass of a scatter kernel, vectorized.
//
// A kernel body that gathers through data-dependent indices (x[ends[t]]) and accumulates into
// gradients at such indices cannot be vectorized as written: every checked access can throw,
// every gradient add may hit an element another task of the same vector adds to, and the
// "does this array have a gradient buffer" tests are branches. The staged loop splits each
// chunk of STAGE_CHUNK tasks in two:
//
//  1. a pure loop (vectorizable) runs the body with every checked index *flagged* instead of
//     checked (an index out of range is replaced by 0 and sets the task's `bad` flag), reads
//     gradients through pointers that are never null (a zero element when the array has no
//     gradient buffer), and records each gradient add as (byte offset, value) in the chunk's
//     stage buffers instead of adding it;
//  2. a scalar loop that, task by task in order, applies the recorded adds in the order the body
//     makes them (so the float additions happen in the same order as in the plain loop), or,
//     for a task flagged bad, runs the checked body, which raises the index error at the access
//     that failed, with everything before it applied as in the plain loop.
//
// Only bodies whose side effects are such adds are staged (codegen/staging.py decides). On this
// 2-core machine the cloth springs' backward ran 35 % faster; denormal operands (tiny velocity
// differences in a settling cloth) cost one microcode assist per vector instruction instead of
// one per scalar instruction.
#pragma once
#include "core.h"
#include "array.h"
#include "accumulate.h"

namespace weft {

#ifndef WEFT_CUDA
constexpr int32 STAGE_CHUNK = 64;

// The recorded values of one gradient add site for a chunk of tasks. Elements the array loads
// address by their size (1-4, 8 or 16 components: array.h offset_by_element_size) are stored
// whole, which the compiler stores interleaved; others (a mat33's 9 components, a transform's
// 7) one column per component, which it stores with unit stride: it cannot store groups of 9
// from vector registers at all, and an FEM assembly's staged loop stayed scalar for the two
// mat33 records of its rest shapes.
template <typename T, bool COLUMNS = !offset_by_element_size<T>::value>
struct stage_values {
    T v[STAGE_CHUNK];
    WEFT_FN void put(int k, const T& x) { v[k] = x; }
    WEFT_FN T get(int k) const { return v[k]; }
};
template <typename T>
struct stage_values<T, true> {
    typedef typename element_traits<T>::scalar S;
    static constexpr unsigned n = element_traits<T>::components;
    static_assert(sizeof(T) == n * sizeof(S), "an element of scalar components only");
    S c[n][STAGE_CHUNK];
    WEFT_FN void put(int k, const T& x) {
        for (unsigned j = 0; j < n; ++j) c[j][k] = ((const S*)&x)[j];
    }
    WEFT_FN T get(int k) const {
        T x;
        for (unsigned j = 0; j < n; ++j) ((S*)&x)[j] = c[j][k];
        return x;
    }
};

// A zero element of any type up to 256 bytes: the gradient read of an array without one.
alignas(64) static const char stage_zero_bytes[256] = {};

// An index after Python-style wrapping of negative values, or 0 (with `bad` set) when out of range.
WEFT_FN int64 flagged_index(bool& bad, int64 i, int32 n) {
    if (i < 0) i += n;
    bool ok = uint64(i) < uint64(n);
    bad |= !ok;
    return ok ? i : 0;
}

// Byte offset of an element from the start of the array's buffers (data and gradient share the
// layout), with every index flagged.
template <typename T, typename... I>
WEFT_FN int64 stage_offset(bool& bad, const array_t<T>& a, I... idx) {
    const int64 ix[] = {int64(idx)...};
    int64 off = 0;
    for (int d = 0; d < int(sizeof...(I)); ++d) off += flagged_index(bad, ix[d], a.shape[d]) * a.strides[d];
    return off;
}
// The same for an access the launch proved in bounds (the fast body's thread-indexed accesses).
template <typename T, typename... I>
WEFT_FN int64 stage_offset_nc(const array_t<T>& a, I... idx) {
    return (const char*)elem_ptr_nc(a.data, a, int64(idx)...) - (const char*)a.data;
}

template <typename T>
WEFT_FN T stage_load(const array_t<T>& a, int64 off) {
    return *(const T*)((const char*)a.data + off);
}
// The element of the gradient at `off`, or zero without a gradient buffer (no branch).
template <typename T>
WEFT_FN T stage_grad(const array_t<T>& a, int64 off) {
    static_assert(sizeof(T) <= sizeof(stage_zero_bytes), "element too large for a staged gradient read");
    const char* p = a.grad ? (const char*)a.grad + off : stage_zero_bytes;
    return *(const T*)p;
}

// The adjoint of atomic_add / atomic_sub: the element's gradient added to (subtracted from) the
// value's adjoint; nothing without a gradient buffer (a select, not a branch: written with the
// vector types' add/sub, which GCC vectorizes, where their += kept the loop scalar).
template <typename T>
WEFT_FN void stage_adj_atomic_add(const array_t<T>& a, int64 off, T& adj_v) {
    adj_v = a.grad ? add(adj_v, stage_grad(a, off)) : adj_v;
}
template <typename T>
WEFT_FN void stage_adj_atomic_sub(const array_t<T>& a, int64 off, T& adj_v) {
    adj_v = a.grad ? sub(adj_v, stage_grad(a, off)) : adj_v;
}

// Step 1 of a staged forward pass: an atomic_add whose old value is unused, recorded; returns
// the zero element, as the accumulating add does.
template <typename T, typename V>
WEFT_FN T stage_record(int64& off_slot, stage_values<T>& values, int k, int64 off, const V& v) {
    off_slot = off;
    values.put(k, T(v));
    return T{};
}

// Step 2: a recorded gradient add, applied as the plain body would have made it.
template <typename T>
WEFT_FN void stage_accumulate(const thread_ctx& tc, const array_t<T>& a, int64 off, T v) {
    if (a.grad) accumulate_raw(tc, (T*)((char*)a.grad + off), v);
}
// ... and a recorded forward add, as accumulate_add makes it (accumulate.h).
template <typename T>
WEFT_FN void stage_accumulate_data(const thread_ctx& tc, const array_t<T>& a, int64 off, T v) {
    accumulate_raw(tc, (T*)((char*)a.data + off), v);
}
template <typename T>
WEFT_FN void stage_add_exclusive(const array_t<T>& a, int64 off, T v) {
    if (a.grad) *(T*)((char*)a.grad + off) += v;
}
#endif

}  // namespace weft
