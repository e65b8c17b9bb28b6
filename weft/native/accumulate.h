// Accumulations: atomic adds (and subtractions) whose result nobody reads, into arrays that the
// kernel only accumulates into (forward: `wp.atomic_add/atomic_sub(a, i, v)` with the old value
// unused and no other access to `a`; backward: gradients of arrays the kernel only reads).
// access.py proves those conditions and the renderer calls accumulate_add/_sub and adj_load_accum
// for them; other gradient adds of a kernel body go through adj_load_shared. Kernel bodies pass
// their thread_ctx (core.h), so none of these needs a thread-local lookup.
//
// On the CPU, when several threads run a launch, each thread sums its contributions in a small
// direct-mapped table of (address, partial sum) and adds each partial sum atomically once, when
// the slot is needed for another address or the thread's share of the launch ends
// (accumulate_scope). A float add into one shared value then costs a local add instead of a
// compare-and-swap on a cache line both cores fight over. The sums are the same up to the order
// of float additions, which atomics never fixed anyway. On CUDA (and for other scalar types) an
// accumulation is the plain atomic.
#pragma once
#include "core.h"
#include "array.h"
#include "vec_types.h"

namespace weft {

#ifndef WEFT_CUDA
template <typename T>
inline void cas_add(T* p, T v) {
    atomic_update_float(p, [v](T o) { return o + v; });
}

struct accumulator {
    static constexpr uint32 SLOTS = 4096;  // float slots: 4096 consecutive floats map apart
    static constexpr uint32 DSLOTS = 1024;
    template <typename T>
    struct slot {
        T* key;
        T val;
    };
    slot<float> f[SLOTS];
    slot<double> d[DSLOTS];
    uint16_t used_f[SLOTS], used_d[DSLOTS];
    uint32 n_f, n_d;

    template <typename T, uint32 N>
    static inline void add(slot<T>* table, uint16_t* used, uint32& n, T* p, T v) {
        uint32 h = uint32(uintptr_t(p) / sizeof(T)) & (N - 1);
        slot<T>& s = table[h];
        if (s.key == p) {
            s.val += v;
            return;
        }
        if (s.key)
            cas_add(s.key, s.val);
        else
            used[n++] = uint16_t(h);
        s.key = p;
        s.val = v;
    }
    inline void add(float* p, float v) { add<float, SLOTS>(f, used_f, n_f, p, v); }
    inline void add(double* p, double v) { add<double, DSLOTS>(d, used_d, n_d, p, v); }

    template <typename T>
    static inline void flush(slot<T>* table, uint16_t* used, uint32& n) {
        for (uint32 k = 0; k < n; ++k) {
            slot<T>& s = table[used[k]];
            cas_add(s.key, s.val);
            s.key = nullptr;
        }
        n = 0;
    }
    inline void flush() {
        flush(f, used_f, n_f);
        flush(d, used_d, n_d);
    }
};

inline accumulator* thread_accumulator() {
    static thread_local accumulator* table = nullptr;
    if (!table) table = new accumulator();  // zeroed; one per thread and module, kept for reuse
    return table;
}

// Opened by a kernel entry point around its share of the launch: gives `tc` the thread's table
// when the launch is multi-threaded and the runtime checks passed (no accumulated array overlaps
// another array argument); flushes the partial sums when the share ends, normally or by a kernel
// error.
struct accumulate_scope {
    thread_ctx& tc;
    accumulate_scope(thread_ctx& tc_, bool enable) : tc(tc_) {
        tc.acc = enable && !tc.serial ? thread_accumulator() : nullptr;
    }
    ~accumulate_scope() {
        if (tc.acc) {
            tc.acc->flush();
            tc.acc = nullptr;
        }
    }
};

// One float add of a kernel body: into the table, plainly (one-thread launch) or atomically.
template <typename T>
inline void float_add(const thread_ctx& tc, T* p, T v) {
    if (tc.acc)
        tc.acc->add(p, v);
    else if (tc.serial)
        *p += v;
    else
        cas_add(p, v);
}
inline void accumulate_raw(const thread_ctx& tc, float* p, float v) { float_add(tc, p, v); }
inline void accumulate_raw(const thread_ctx& tc, double* p, double v) { float_add(tc, p, v); }
// Adds that another access of the same array may observe: never through the table.
inline void shared_add_raw(const thread_ctx& tc, float* p, float v) { float_add(thread_ctx{tc.serial, nullptr}, p, v); }
inline void shared_add_raw(const thread_ctx& tc, double* p, double v) {
    float_add(thread_ctx{tc.serial, nullptr}, p, v);
}
#endif

// Other scalar types (and every type on CUDA): the atomic itself.
template <typename T>
WEFT_FN void accumulate_raw(const thread_ctx&, T* p, T v) {
    atomic_add_raw(p, v);
}
template <typename T>
WEFT_FN void shared_add_raw(const thread_ctx&, T* p, T v) {
    atomic_add_raw(p, v);
}

// Composite elements: per component. A one-thread launch adds the whole element at once (one
// test instead of one per component, and the component adds unrolled).
#ifndef WEFT_CUDA
#define WEFT_SERIAL_ELEMENT_ADD(COMPONENTS, EXPR)    \
    if (tc.serial) {                                 \
        for (unsigned i = 0; i < (COMPONENTS); ++i) { \
            auto& dst = EXPR(p);                     \
            dst = dst + EXPR(&v);                    \
        }                                            \
        return;                                      \
    }
#else
#define WEFT_SERIAL_ELEMENT_ADD(COMPONENTS, EXPR)
#endif
#define WEFT_COMPONENT(ptr) (((S*)(ptr))[i])
#define WEFT_ACCUM_COMPOSITES(NAME)                                                         \
    template <unsigned N, typename T>                                                       \
    WEFT_FN void NAME(const thread_ctx& tc, vec_t<N, T>* p, vec_t<N, T> v) {                \
        typedef T S;                                                                        \
        WEFT_SERIAL_ELEMENT_ADD(N, WEFT_COMPONENT)                                          \
        for (unsigned i = 0; i < N; ++i) NAME(tc, &p->c[i], v.c[i]);                        \
    }                                                                                       \
    template <unsigned R, unsigned C, typename T>                                           \
    WEFT_FN void NAME(const thread_ctx& tc, mat_t<R, C, T>* p, mat_t<R, C, T> v) {          \
        typedef T S;                                                                        \
        WEFT_SERIAL_ELEMENT_ADD(R * C, WEFT_COMPONENT)                                      \
        for (unsigned i = 0; i < R; ++i)                                                    \
            for (unsigned j = 0; j < C; ++j) NAME(tc, &p->data[i][j], v.data[i][j]);        \
    }                                                                                       \
    template <typename T>                                                                   \
    WEFT_FN void NAME(const thread_ctx& tc, quat_t<T>* p, quat_t<T> v) {                    \
        typedef T S;                                                                        \
        WEFT_SERIAL_ELEMENT_ADD(4, WEFT_COMPONENT)                                          \
        for (int i = 0; i < 4; ++i) NAME(tc, &(*p)[i], v[i]);                               \
    }                                                                                       \
    template <typename T>                                                                   \
    WEFT_FN void NAME(const thread_ctx& tc, transform_t<T>* p, transform_t<T> v) {          \
        NAME(tc, &p->p, v.p);                                                               \
        NAME(tc, &p->q, v.q);                                                               \
    }
WEFT_ACCUM_COMPOSITES(accumulate_raw)
WEFT_ACCUM_COMPOSITES(shared_add_raw)
#undef WEFT_ACCUM_COMPOSITES
#undef WEFT_COMPONENT
#undef WEFT_SERIAL_ELEMENT_ADD

// Whether two arrays' data (and gradient) byte ranges are apart: the runtime condition for
// accumulating into one while the kernel reads or writes the other.
template <typename T>
WEFT_FN void byte_span(const T* base, const array_t<T>& a, uintptr_t& lo, uintptr_t& hi) {
    lo = uintptr_t(base);
    hi = lo + sizeof(T);
    for (int d = 0; d < a.ndim; ++d) {
        if (a.shape[d] == 0) {
            hi = lo;
            return;
        }
        int64 reach = int64(a.shape[d] - 1) * a.strides[d];
        if (reach < 0)
            lo = uintptr_t(int64(lo) + reach);
        else
            hi = uintptr_t(int64(hi) + reach);
    }
}
template <typename T, typename U>
WEFT_FN bool spans_apart(const T* pa, const array_t<T>& a, const U* pb, const array_t<U>& b) {
    if (!pa || !pb) return true;
    uintptr_t alo, ahi, blo, bhi;
    byte_span(pa, a, alo, ahi);
    byte_span(pb, b, blo, bhi);
    return ahi <= blo || bhi <= alo;
}
template <typename T, typename U>
WEFT_FN bool arrays_apart(const array_t<T>& a, const array_t<U>& b) {
    return spans_apart(a.data, a, b.data, b) && spans_apart(a.grad, a, b.grad, b) &&
           spans_apart(a.data, a, b.grad, b) && spans_apart(a.grad, a, b.data, b);
}

// accumulate_add / accumulate_sub(tc, a, loc, i..., v): wp.atomic_add / atomic_sub in a kernel
// body whose previous value is not used.
template <typename T>
WEFT_FN T negated(const T& v) {
    return neg(v);
}
template <typename T>
WEFT_FN transform_t<T> negated(const transform_t<T>& v) {
    transform_t<T> r;
    r.p = neg(v.p);
    r.q = neg(v.q);
    return r;
}
template <typename T, typename... I>
WEFT_FN T accumulate_at(const thread_ctx& tc, const array_t<T>& a, int32 loc, T v, I... idx) {
    accumulate_raw(tc, element<true>(a.data, a, loc, idx...), v);
    return T{};
}
template <typename T, typename... I>
WEFT_FN T accumulate_sub_at(const thread_ctx& tc, const array_t<T>& a, int32 loc, T v, I... idx) {
    accumulate_raw(tc, element<true>(a.data, a, loc, idx...), negated(v));
    return T{};
}
// adj_load_accum[_nc] / adj_load_shared[_nc](tc, a, loc, i..., adj): the gradient of a read in a
// kernel body; accumulated (the array is only read), or added where other accesses may see it.
template <bool CHECK, typename T, typename... I>
WEFT_FN void adj_load_accum_at(const thread_ctx& tc, const array_t<T>& a, int32 loc, T adj_ret, I... idx) {
    if (a.grad) accumulate_raw(tc, element<CHECK>(a.grad, a, loc, idx...), adj_ret);
}
template <bool CHECK, typename T, typename... I>
WEFT_FN void adj_load_shared_at(const thread_ctx& tc, const array_t<T>& a, int32 loc, T adj_ret, I... idx) {
    if (a.grad) shared_add_raw(tc, element<CHECK>(a.grad, a, loc, idx...), adj_ret);
}

// NAME(tc, a, loc, i0[, i1[, i2[, i3]]], last) -> IMPL<flags>(tc, a, loc, last, indices...) (as
// in array.h). accumulate_add returns a zero T only so that it renders like atomic_add.
#define WEFT_ACCUM_INDEXED(RET, NAME, IMPL, ...)                                                      \
    template <typename T, typename I0>                                                               \
    WEFT_FN RET NAME(const thread_ctx& tc, const array_t<T>& a, int32 loc, I0 i0, T last) {          \
        return IMPL<__VA_ARGS__>(tc, a, loc, last, i0);                                              \
    }                                                                                                \
    template <typename T, typename I0, typename I1>                                                  \
    WEFT_FN RET NAME(const thread_ctx& tc, const array_t<T>& a, int32 loc, I0 i0, I1 i1, T last) {   \
        return IMPL<__VA_ARGS__>(tc, a, loc, last, i0, i1);                                          \
    }                                                                                                \
    template <typename T, typename I0, typename I1, typename I2>                                     \
    WEFT_FN RET NAME(const thread_ctx& tc, const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2,      \
                     T last) {                                                                       \
        return IMPL<__VA_ARGS__>(tc, a, loc, last, i0, i1, i2);                                      \
    }                                                                                                \
    template <typename T, typename I0, typename I1, typename I2, typename I3>                        \
    WEFT_FN RET NAME(const thread_ctx& tc, const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2,      \
                     I3 i3, T last) {                                                                \
        return IMPL<__VA_ARGS__>(tc, a, loc, last, i0, i1, i2, i3);                                  \
    }

WEFT_ACCUM_INDEXED(T, accumulate_add, accumulate_at, T)
WEFT_ACCUM_INDEXED(T, accumulate_sub, accumulate_sub_at, T)
WEFT_ACCUM_INDEXED(void, adj_load_accum, adj_load_accum_at, true, T)
WEFT_ACCUM_INDEXED(void, adj_load_accum_nc, adj_load_accum_at, false, T)
WEFT_ACCUM_INDEXED(void, adj_load_shared, adj_load_shared_at, true, T)
WEFT_ACCUM_INDEXED(void, adj_load_shared_nc, adj_load_shared_at, false, T)
#undef WEFT_ACCUM_INDEXED

}  // namespace weft
