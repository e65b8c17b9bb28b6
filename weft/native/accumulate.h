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
#if !defined(WEFT_CUDA) && !defined(_WIN32)
#include <sched.h>
#define WEFT_YIELD() sched_yield()
#else
#define WEFT_YIELD() ((void)0)
#endif
#include "core.h"
#include "array.h"
#include "vec_types.h"

// Inlined on the CPU whatever their number in a body: out of line, each call of a scatter kernel
// (8 vec3 adds per particle in a particle-to-grid transfer) costs more than the add.
#ifndef WEFT_CUDA
#define WEFT_ACCUM_FN __attribute__((always_inline)) inline
#else
#define WEFT_ACCUM_FN WEFT_FN
#endif

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

// Private copies. When a multi-threaded launch accumulates into small arrays (the forward's
// atomic_add targets, or the gradients of arrays the backward only reads), every thread but the
// one running the first share gets a zeroed private copy of each target and adds into it
// plainly; the first share adds plainly into the arrays themselves, since no other thread
// touches them. When all shares have run their tasks, each thread adds a slice of every copy
// into its array, copies of one array in the order of the shares (so a given thread count
// always sums in the same order), and clears it. No atomics and no table evictions: a scatter
// over a few thousand addresses (cloth springs) scales with the threads.
//
// A target: the address of the data or gradient pointer in the entry point's copy of the
// arguments (swapped for the private copy), its byte size, and the scalar kind (1 float,
// 2 double, 0 anything else: such launches keep the table).
struct private_target {
    void** field;
    int64 bytes;
    int32 kind;
};
// The target for pointer `ptr` (a.data or a.grad of the entry point's argument copy): only
// contiguous C-order arrays (the copy must have the same layout); a null pointer has no target.
template <typename T>
inline private_target private_target_of(T*& ptr, const array_t<T>& a) {
    typedef typename element_traits<T>::scalar S;
    int32 kind = is_same_type<S, float32>::value ? 1 : is_same_type<S, float64>::value ? 2 : 0;
    int64 n = 1, stride = int64(sizeof(T));
    for (int d = a.ndim - 1; d >= 0; --d) {
        if (a.shape[d] != 1 && a.strides[d] != stride) kind = 0;
        stride *= a.shape[d];
        n *= a.shape[d];
    }
    return private_target{(void**)&ptr, ptr ? n * int64(sizeof(T)) : 0, kind};
}

struct private_record {
    void* array;
    void* copy;
    int64 bytes;
    int32 kind;
    int64 begin;  // the share's first task: the order of the final sum
};
struct private_registry {
    static constexpr int32 MAX = 256;
    private_record rec[MAX];
    int32 count;     // records so far
    int32 finished;  // shares done with their tasks
    int32 slices;    // slices of the final sum handed out
    int32 done;      // shares done with their slice
};
// One registry per module: the runtime runs one multi-threaded launch at a time.
inline private_registry& registry() {
    static private_registry r;
    return r;
}
// This thread's private copies, kept for reuse (64-byte aligned, grown as needed). They are zero
// at rest: a share finds them zeroed, and the final sum clears what it adds.
inline char* private_space(int64 bytes) {
    static thread_local char* space = nullptr;
    static thread_local int64 cap = 0;
    if (bytes > cap) {
        free(space);
        int64 want = (bytes < 2 * cap ? 2 * cap : bytes + 63) / 64 * 64;
        space = (char*)aligned_alloc(64, size_t(want));
        cap = space ? want : 0;
        if (space) memset(space, 0, size_t(want));
    }
    return space;
}

template <typename S>
inline void add_and_clear(S* array, S* copy, int64 lo, int64 hi) {
    for (int64 k = lo; k < hi; ++k) {
        array[k] += copy[k];
        copy[k] = S(0);
    }
}
// Every share ends here: it waits until all shares have run their tasks, then adds slice
// `slice` of every copy into its array (and clears it). Copies of one array are added in share
// order, so the sum of each element does not depend on which thread adds it.
inline void sum_private_slice(private_registry& r, int32 slice, int32 parts) {
    int32 n = __atomic_load_n(&r.count, __ATOMIC_ACQUIRE);
    int32 order[private_registry::MAX];
    for (int32 i = 0; i < n; ++i) {
        int32 j = i;
        for (; j > 0 && r.rec[order[j - 1]].begin > r.rec[i].begin; --j) order[j] = order[j - 1];
        order[j] = i;
    }
    for (int32 i = 0; i < n; ++i) {
        const private_record& c = r.rec[order[i]];
        int64 scalars = c.bytes / (c.kind == 1 ? 4 : 8);
        int64 lo = scalars * slice / parts, hi = scalars * (slice + 1) / parts;
        if (c.kind == 1)
            add_and_clear((float32*)c.array, (float32*)c.copy, lo, hi);
        else
            add_and_clear((float64*)c.array, (float64*)c.copy, lo, hi);
    }
}
// Wait until `done()` holds: spin briefly, then yield the core (with more threads than cores,
// cpu_threads above the core count or other programs running, the share still running may need
// this core to finish).
template <typename F>
inline void spin_until(F done) {
    for (int spins = 0; !done(); ++spins) {
        if (spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            WEFT_YIELD();
        }
    }
}

inline void end_private_share(int32 parts) {
    private_registry& r = registry();
    __atomic_add_fetch(&r.finished, 1, __ATOMIC_ACQ_REL);
    spin_until([&] { return __atomic_load_n(&r.finished, __ATOMIC_ACQUIRE) >= parts; });
    sum_private_slice(r, __atomic_fetch_add(&r.slices, 1, __ATOMIC_ACQ_REL), parts);
    if (__atomic_add_fetch(&r.done, 1, __ATOMIC_ACQ_REL) == parts) {  // the others are past the registry
        r.count = r.slices = r.finished = 0;
        __atomic_store_n(&r.done, 0, __ATOMIC_RELEASE);
    }
}

// An ordered launch (deterministic mode, launch_context::ordered) whose shares cannot use private
// copies runs them one after another in task order: a share waits until the shares before it
// are done, then adds plainly, as one thread would. Every share of such a launch decides the
// same way (the same arguments and sizes), so either all use copies or all take turns.
inline void wait_for_turn(launch_context* ctx, int64 begin) {
    spin_until([&] { return __atomic_load_n(&ctx->turn, __ATOMIC_ACQUIRE) == begin; });
}

// Opened by a kernel entry point around its share of the launch. On one thread, accumulations
// are plain adds. On several, when the runtime checks passed (no accumulated array overlaps
// another array argument): private copies when every target qualifies and their total size is
// small (the copies of all shares together at most PRIVATE_BYTES, and at most 4 scalars per task
// of the launch), else the
// table, or, in an ordered launch, turns. `failed`: no memory for the private copies (the entry
// point raises MemoryError).
struct accumulate_scope {
    // 32 MiB: a particle-to-grid transfer into a 64^3 grid's mass and momentum (4 MiB of targets)
    // takes copies on up to 8 threads; its random scatter defeated the table (an atomic per add)
    static constexpr int64 PRIVATE_BYTES = int64(1) << 25;
    thread_ctx& tc;
    launch_context* ctx = nullptr;  // set when this launch uses private copies
    launch_context* turns = nullptr;  // set when this share took its turn (ordered launch)
    int64 end = 0;                    // the share's end: the next share's turn
    bool failed = false;

    accumulate_scope(thread_ctx& tc_, bool enable) : tc(tc_) {
        tc.acc = enable && !tc.serial ? thread_accumulator() : nullptr;
    }
    template <int32 N>
    accumulate_scope(thread_ctx& tc_, bool enable, launch_context* ctx_, int64 begin, int64 end_,
                     const private_target (&t)[N])
        : tc(tc_), end(end_) {
        tc.acc = nullptr;
        if (tc.serial) return;
        int64 total = 0;
        bool ok = enable && ctx_->parts > 1 && (ctx_->parts - 1) * N <= private_registry::MAX;
        for (int32 k = 0; k < N; ++k) {
            ok = ok && (t[k].kind != 0 || t[k].bytes == 0);
            total += t[k].bytes;
        }
        if (!ok || (ctx_->parts - 1) * total > PRIVATE_BYTES || total / 4 > 4 * ctx_->bounds.size) {
            if (ctx_->ordered) {  // deterministic: this share's turn, then plain adds
                wait_for_turn(ctx_, begin);
                turns = ctx_;
                tc.plain_accumulate = true;
                return;
            }
            if (enable) tc.acc = thread_accumulator();
            return;
        }
        // No target has memory (every accumulated gradient array is None): nothing to add, and
        // no copy to ask for (a thread that never had copies would get a null space for 0 bytes).
        if (total == 0) return;
        ctx = ctx_;
        tc.plain_accumulate = true;
        if (begin == 0) return;  // the first share adds into the arrays themselves
        char* space = private_space(total);
        if (!space) {
            failed = true;
            return;
        }
        private_registry& r = registry();
        for (int32 k = 0; k < N; ++k) {
            if (t[k].bytes == 0) continue;
            int32 slot = __atomic_fetch_add(&r.count, 1, __ATOMIC_ACQ_REL);
            r.rec[slot] = private_record{*t[k].field, space, t[k].bytes, t[k].kind, begin};
            *t[k].field = space;
            space += t[k].bytes;
        }
    }
    // A share that could not get its copies must not add anything (the first share adds plainly
    // into the arrays): it ends the launch with a MemoryError instead.
    void check() const {
        if (failed) {
            kernel_error e = {};
            e.code = 4;
            e.loc = -1;
            raise_kernel_error(e);
        }
    }
    ~accumulate_scope() {
        if (tc.acc) {
            tc.acc->flush();
            tc.acc = nullptr;
        }
        if (ctx) end_private_share(ctx->parts);
        if (turns) __atomic_store_n(&turns->turn, end, __ATOMIC_RELEASE);
    }
};

// One float add of a kernel body: into the table, plainly (one-thread launch) or atomically.
template <typename T>
WEFT_ACCUM_FN void float_add(const thread_ctx& tc, T* p, T v) {
    if (tc.acc)
        tc.acc->add(p, v);
    else if (tc.plain_accumulate)
        *p += v;
    else
        cas_add(p, v);
}
WEFT_ACCUM_FN void accumulate_raw(const thread_ctx& tc, float* p, float v) { float_add(tc, p, v); }
WEFT_ACCUM_FN void accumulate_raw(const thread_ctx& tc, double* p, double v) { float_add(tc, p, v); }
// Adds that another access of the same array may observe: never through the table or a private
// copy, plain only when the launch runs on one thread.
inline void shared_add_raw(const thread_ctx& tc, float* p, float v) {
    float_add(thread_ctx{tc.serial, tc.serial, nullptr}, p, v);
}
inline void shared_add_raw(const thread_ctx& tc, double* p, double v) {
    float_add(thread_ctx{tc.serial, tc.serial, nullptr}, p, v);
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
#define WEFT_SERIAL_ELEMENT_ADD(COMPONENTS, EXPR, PLAIN) \
    if (tc.PLAIN) {                                      \
        for (unsigned i = 0; i < (COMPONENTS); ++i) { \
            auto& dst = EXPR(p);                     \
            dst = dst + EXPR(&v);                    \
        }                                            \
        return;                                      \
    }
#else
#define WEFT_SERIAL_ELEMENT_ADD(COMPONENTS, EXPR, PLAIN)
#endif
#define WEFT_COMPONENT(ptr) (((S*)(ptr))[i])
#define WEFT_ACCUM_COMPOSITES(NAME, PLAIN)                                                       \
    template <unsigned N, typename T>                                                       \
    WEFT_ACCUM_FN void NAME(const thread_ctx& tc, vec_t<N, T>* p, vec_t<N, T> v) {          \
        typedef T S;                                                                        \
        WEFT_SERIAL_ELEMENT_ADD(N, WEFT_COMPONENT, PLAIN)                                     \
        for (unsigned i = 0; i < N; ++i) NAME(tc, &p->c[i], v.c[i]);                        \
    }                                                                                       \
    template <unsigned R, unsigned C, typename T>                                           \
    WEFT_FN void NAME(const thread_ctx& tc, mat_t<R, C, T>* p, mat_t<R, C, T> v) {          \
        typedef T S;                                                                        \
        WEFT_SERIAL_ELEMENT_ADD(R * C, WEFT_COMPONENT, PLAIN)                                     \
        for (unsigned i = 0; i < R; ++i)                                                    \
            for (unsigned j = 0; j < C; ++j) NAME(tc, &p->data[i][j], v.data[i][j]);        \
    }                                                                                       \
    template <typename T>                                                                   \
    WEFT_FN void NAME(const thread_ctx& tc, quat_t<T>* p, quat_t<T> v) {                    \
        typedef T S;                                                                        \
        WEFT_SERIAL_ELEMENT_ADD(4, WEFT_COMPONENT, PLAIN)                                     \
        for (int i = 0; i < 4; ++i) NAME(tc, &(*p)[i], v[i]);                               \
    }                                                                                       \
    template <typename T>                                                                   \
    WEFT_FN void NAME(const thread_ctx& tc, transform_t<T>* p, transform_t<T> v) {          \
        NAME(tc, &p->p, v.p);                                                               \
        NAME(tc, &p->q, v.q);                                                               \
    }
WEFT_ACCUM_COMPOSITES(accumulate_raw, plain_accumulate)
WEFT_ACCUM_COMPOSITES(shared_add_raw, serial)
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
WEFT_ACCUM_FN T accumulate_at(const thread_ctx& tc, const array_t<T>& a, int32 loc, T v, I... idx) {
    accumulate_raw(tc, element<true>(a.data, a, loc, idx...), v);
    return T{};
}
template <typename T, typename... I>
WEFT_ACCUM_FN T accumulate_sub_at(const thread_ctx& tc, const array_t<T>& a, int32 loc, T v, I... idx) {
    accumulate_raw(tc, element<true>(a.data, a, loc, idx...), negated(v));
    return T{};
}
// hoist_add / hoist_sub(sum, used, v): an accumulation into the same element for the whole launch
// (access.py _hoisting_facts), summed in the calling thread's local `sum`; the entry point adds
// the sum once with accumulate_add when the thread's share ends (when `used`).
template <typename T, typename V>
WEFT_FN T hoist_add(T& sum, bool& used, const V& v) {
    sum += T(v);
    used = true;
    return T{};
}
template <typename T, typename V>
WEFT_FN T hoist_sub(T& sum, bool& used, const V& v) {
    sum -= T(v);
    used = true;
    return T{};
}
// The sum of N partial sums, pairwise (the lanes of a hoisted sum).
template <int N, typename T>
WEFT_FN T sum_lanes(const T (&lanes)[N]) {
    T part[N];
    for (int k = 0; k < N; ++k) part[k] = lanes[k];
    for (int w = N / 2; w > 0; w /= 2)
        for (int k = 0; k < w; ++k) part[k] += part[k + w];
    return part[0];
}
// adj_load_accum[_nc] / adj_load_shared[_nc](tc, a, loc, i..., adj): the gradient of a read in a
// kernel body; accumulated (the array is only read), or added where other accesses may see it.
template <bool CHECK, typename T, typename... I>
WEFT_FN void adj_load_accum_at(const thread_ctx& tc, const array_t<T>& a, int32 loc, T adj_ret, I... idx) {
    if (a.grad) accumulate_raw(tc, element<CHECK>(a.grad, a, loc, idx...), adj_ret);
}
// adj_load_plain[_nc](tc, a, loc, i..., adj): the same in the backward body a CPU share runs when
// it adds into gradient memory no other thread touches (one thread, or its private copies).
// (Through accumulate_raw with a context that says so: plain adds for floats, vectors and
// matrices, known at compile time; other elements, such as structs, keep their atomic.)
#ifndef WEFT_CUDA
template <bool CHECK, typename T, typename... I>
WEFT_ACCUM_FN void adj_load_plain_at(const thread_ctx& tc, const array_t<T>& a, int32 loc, T adj_ret, I... idx) {
    if (a.grad) accumulate_raw(thread_ctx{tc.serial, true, nullptr}, element<CHECK>(a.grad, a, loc, idx...), adj_ret);
}
#endif
template <bool CHECK, typename T, typename... I>
WEFT_FN void adj_load_shared_at(const thread_ctx& tc, const array_t<T>& a, int32 loc, T adj_ret, I... idx) {
    if (a.grad) shared_add_raw(tc, element<CHECK>(a.grad, a, loc, idx...), adj_ret);
}

// NAME(tc, a, loc, i0[, i1[, i2[, i3]]], last) -> IMPL<flags>(tc, a, loc, last, indices...) (as
// in array.h). accumulate_add returns a zero T only so that it renders like atomic_add.
#define WEFT_ACCUM_INDEXED(RET, NAME, IMPL, ...)                                                      \
    template <typename T, typename I0>                                                               \
    WEFT_ACCUM_FN RET NAME(const thread_ctx& tc, const array_t<T>& a, int32 loc, I0 i0, T last) {          \
        return IMPL<__VA_ARGS__>(tc, a, loc, last, i0);                                              \
    }                                                                                                \
    template <typename T, typename I0, typename I1>                                                  \
    WEFT_ACCUM_FN RET NAME(const thread_ctx& tc, const array_t<T>& a, int32 loc, I0 i0, I1 i1, T last) {   \
        return IMPL<__VA_ARGS__>(tc, a, loc, last, i0, i1);                                          \
    }                                                                                                \
    template <typename T, typename I0, typename I1, typename I2>                                     \
    WEFT_ACCUM_FN RET NAME(const thread_ctx& tc, const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2,      \
                     T last) {                                                                       \
        return IMPL<__VA_ARGS__>(tc, a, loc, last, i0, i1, i2);                                      \
    }                                                                                                \
    template <typename T, typename I0, typename I1, typename I2, typename I3>                        \
    WEFT_ACCUM_FN RET NAME(const thread_ctx& tc, const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2,      \
                     I3 i3, T last) {                                                                \
        return IMPL<__VA_ARGS__>(tc, a, loc, last, i0, i1, i2, i3);                                  \
    }

// plain_add / plain_sub(a, loc, i..., v): an accumulation in the body a CPU share runs when it
// adds into memory no other thread touches (one thread, or its private copies): the add itself.
template <typename T, typename... I>
WEFT_ACCUM_FN T plain_add_at(const array_t<T>& a, int32 loc, T v, I... idx) {
    T* p = element<true>(a.data, a, loc, idx...);
    *p = add(*p, v);
    return T{};
}
template <typename T, typename... I>
WEFT_ACCUM_FN T plain_sub_at(const array_t<T>& a, int32 loc, T v, I... idx) {
    T* p = element<true>(a.data, a, loc, idx...);
    *p = sub(*p, v);
    return T{};
}

WEFT_ACCUM_INDEXED(T, accumulate_add, accumulate_at, T)
WEFT_ACCUM_INDEXED(T, accumulate_sub, accumulate_sub_at, T)

#define WEFT_PLAIN_INDEXED(NAME, IMPL)                                                                    \
    template <typename T, typename I0>                                                                   \
    WEFT_ACCUM_FN T NAME(const array_t<T>& a, int32 loc, I0 i0, T last) {                                \
        return IMPL(a, loc, last, i0);                                                                   \
    }                                                                                                    \
    template <typename T, typename I0, typename I1>                                                      \
    WEFT_ACCUM_FN T NAME(const array_t<T>& a, int32 loc, I0 i0, I1 i1, T last) {                         \
        return IMPL(a, loc, last, i0, i1);                                                               \
    }                                                                                                    \
    template <typename T, typename I0, typename I1, typename I2>                                         \
    WEFT_ACCUM_FN T NAME(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, T last) {                  \
        return IMPL(a, loc, last, i0, i1, i2);                                                           \
    }                                                                                                    \
    template <typename T, typename I0, typename I1, typename I2, typename I3>                            \
    WEFT_ACCUM_FN T NAME(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, I3 i3, T last) {           \
        return IMPL(a, loc, last, i0, i1, i2, i3);                                                       \
    }
WEFT_PLAIN_INDEXED(plain_add, plain_add_at)
WEFT_PLAIN_INDEXED(plain_sub, plain_sub_at)
#undef WEFT_PLAIN_INDEXED
WEFT_ACCUM_INDEXED(void, adj_load_accum, adj_load_accum_at, true, T)
WEFT_ACCUM_INDEXED(void, adj_load_accum_nc, adj_load_accum_at, false, T)
#ifndef WEFT_CUDA  // the CPU's plain-add bodies only
WEFT_ACCUM_INDEXED(void, adj_load_plain, adj_load_plain_at, true, T)
WEFT_ACCUM_INDEXED(void, adj_load_plain_nc, adj_load_plain_at, false, T)
#endif
WEFT_ACCUM_INDEXED(void, adj_load_shared, adj_load_shared_at, true, T)
WEFT_ACCUM_INDEXED(void, adj_load_shared_nc, adj_load_shared_at, false, T)
#undef WEFT_ACCUM_INDEXED

}  // namespace weft
