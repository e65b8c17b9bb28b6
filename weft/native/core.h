// weft core: scalar types, arrays, launch bounds, kernel errors and atomics.
// Shared by CPU and CUDA builds; WEFT_FN marks functions callable on both.
#pragma once

#if defined(__CUDACC_RTC__)
// NVRTC has no C library headers: fixed-width integers are typedef'd here; math functions,
// memcpy and printf are CUDA device builtins.
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
typedef long long intptr_t;
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#else
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_CUDA 1
#define WEFT_FN __host__ __device__ inline
#else
#define WEFT_FN inline
#endif

// @wp.kernel(cluster_dim=N): thread block clusters of N blocks, which only sm_90 and newer have;
// compiled for an older arch the kernel runs unclustered.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WEFT_CLUSTER_DIMS(n) __cluster_dims__(n, 1, 1)
#else
#define WEFT_CLUSTER_DIMS(n)
#endif

#if defined(_WIN32)
#define WEFT_EXPORT extern "C" __declspec(dllexport)
#else
#define WEFT_EXPORT extern "C" __attribute__((visibility("default")))
#endif

namespace weft {

typedef bool bool_;
typedef int8_t int8;
typedef int16_t int16;
typedef int32_t int32;
typedef int64_t int64;
typedef uint8_t uint8;
typedef uint16_t uint16;
typedef uint32_t uint32;
typedef uint64_t uint64;
typedef float float32;
typedef double float64;

// Half precision: stored as 16 bits, computed in float32.
struct float16 {
    uint16_t bits;
    WEFT_FN float16() : bits(0) {}
    WEFT_FN float16(float f) { bits = from_float(f); }
    WEFT_FN float16(double f) { bits = from_float(float(f)); }
    WEFT_FN float16(int f) { bits = from_float(float(f)); }
    WEFT_FN operator float() const { return to_float(bits); }
    WEFT_FN float16& operator+=(float16 o) {
        bits = from_float(to_float(bits) + to_float(o.bits));
        return *this;
    }
    WEFT_FN float16& operator-=(float16 o) {
        bits = from_float(to_float(bits) - to_float(o.bits));
        return *this;
    }
    static WEFT_FN uint16_t from_float(float f) {
#ifdef __CUDA_ARCH__
        uint16_t r;  // the hardware conversion (round to nearest even, like the code below)
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
        return r;
#endif
        uint32_t x;
        memcpy(&x, &f, 4);
        uint32_t sign = (x >> 16) & 0x8000u;
        int32_t exp = int32_t((x >> 23) & 0xffu) - 127 + 15;
        uint32_t mant = x & 0x7fffffu;
        if (((x >> 23) & 0xffu) == 0xffu) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));
        if (exp >= 31) return uint16_t(sign | 0x7c00u);
        if (exp <= 0) {
            if (exp < -10) return uint16_t(sign);
            mant |= 0x800000u;
            uint32_t shift = uint32_t(14 - exp);
            uint32_t h = mant >> shift;
            uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
            if (rem > half || (rem == half && (h & 1u))) h++;
            return uint16_t(sign | h);
        }
        uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
        uint32_t rem = mant & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
        return uint16_t(h);
    }
    static WEFT_FN float to_float(uint16_t h) {
#ifdef __CUDA_ARCH__
        float r;
        asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
        return r;
#endif
        uint32_t sign = uint32_t(h & 0x8000u) << 16;
        uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
        if (exp == 0) {
            if (mant == 0) {
                x = sign;
            } else {
                exp = 127 - 15 + 1;
                while (!(mant & 0x400u)) {
                    mant <<= 1;
                    exp--;
                }
                x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
            }
        } else if (exp == 31) {
            x = sign | 0x7f800000u | (mant << 13);
        } else {
            x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
        }
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
};

// bfloat16: the upper 16 bits of a float32 (8-bit exponent, 7-bit mantissa), computed in float32.
// From float: round to nearest even; a NaN stays a NaN (made quiet, so a payload held only in
// the dropped low bits cannot turn it into an infinity).
struct bfloat16 {
    uint16_t bits;
    WEFT_FN bfloat16() : bits(0) {}
    WEFT_FN bfloat16(float f) { bits = from_float(f); }
    WEFT_FN bfloat16(double f) { bits = from_float(float(f)); }
    WEFT_FN bfloat16(int f) { bits = from_float(float(f)); }
    WEFT_FN operator float() const { return to_float(bits); }
    WEFT_FN bfloat16& operator+=(bfloat16 o) {
        bits = from_float(to_float(bits) + to_float(o.bits));
        return *this;
    }
    WEFT_FN bfloat16& operator-=(bfloat16 o) {
        bits = from_float(to_float(bits) - to_float(o.bits));
        return *this;
    }
    static WEFT_FN uint16_t from_float(float f) {
        uint32_t x;
        memcpy(&x, &f, 4);
        if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x0040u);
        x += 0x7fffu + ((x >> 16) & 1u);
        return uint16_t(x >> 16);
    }
    static WEFT_FN float to_float(uint16_t h) {
        uint32_t x = uint32_t(h) << 16;
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
};

// The launch grid; mirrored by types.launch_bounds_t.
struct launch_bounds {
    int32 shape[4];
    int32 ndim;
    int64 size;
};

// Number of iterations of range(start, stop, step).
WEFT_FN int64 range_count(int64 start, int64 stop, int64 step) {
    if (step > 0) return stop > start ? (stop - start + step - 1) / step : 0;
    if (step < 0) return start > stop ? (start - stop - step - 1) / (-step) : 0;
    return 0;
}

// Thread index -> grid coordinates (row-major, last dimension fastest).
WEFT_FN void tid_coords(const launch_bounds& b, int64 index, int32* out) {
    for (int d = b.ndim - 1; d >= 0; --d) {
        out[d] = int32(index % b.shape[d]);
        index /= b.shape[d];
    }
}

// An array as seen by a kernel; mirrored by types.array_t. Strides are in bytes.
// grad == 0 means "this array takes no gradient": adjoint reads are zero, adjoint writes are dropped.
template <typename T>
struct array_t {
    T* data;
    T* grad;
    int32 shape[4];
    int64 strides[4];
    int32 ndim;
    int32 flags;

    // a[i] in a C++ snippet (wp.func_native): element i along the first dimension, unchecked
    WEFT_FN T& operator[](int64 i) const { return *reinterpret_cast<T*>(reinterpret_cast<char*>(data) + i * strides[0]); }
};

enum { ARRAY_RETAIN_GRAD = 1 };

// ---------------------------------------------------------------------------------------------
// Kernel errors. On the CPU an error throws; the entry point catches it and stores the first
// one in the launch context, which Python turns into an exception.
struct kernel_error {
    int32 code;     // 1 = index out of bounds
    int32 loc;      // source-location id (Python maps it to file:line)
    int32 dim;      // which dimension failed
    int32 ndim;
    int64 index[4];
    int32 shape[4];
};

struct launch_context {
    launch_bounds bounds;
    int32 has_error;  // set once, atomically, by the first failing thread
    kernel_error error;
    int32 serial;  // set by the runtime: the launch runs on one thread only
    int32 parts;   // set by the runtime: how many threads run a share of the launch (0: unknown)
    // Set by Python for a deterministic launch whose order-dependent work is accumulations
    // (accumulate.h): private copies when they fit, else the shares take turns in task order.
    int32 ordered;
    int64 turn;  // the first task of the share whose turn it is (ordered launches)
};

#ifndef WEFT_CUDA
// True while this thread runs a launch that no other thread takes part in: atomics on floats
// may then be plain read-modify-writes (no compare-and-swap loop). Read by atomics in funcs;
// kernel bodies get the same facts through thread_ctx, without a thread-local lookup per atomic
// (__tls_get_addr in a dlopen'ed library cost 40% of a scatter kernel). One variable per library
// (inline, hidden), not per translation unit: a module compiled as several units links one copy
// of each inline function that reads it (atomic_add_raw), which must see the flag the entry
// point of any unit set.
inline thread_local bool serial_launch = false;

struct accumulator;  // accumulate.h
struct thread_ctx {
    bool serial;            // the launch runs on this thread only
    bool plain_accumulate;  // accumulations may be plain adds (serial, or private copies: accumulate.h)
    accumulator* acc;       // this thread's accumulation table, or null (accumulate.h)
    // A run of tasks along the last grid dimension, kept by a multi-dimensional entry's task loop
    // (tid_start / tid_next_run): task coords_task + r (r < run) is at coords with r added to the
    // last one, so its bodies need no division per task (tid_coords_at).
    int64 coords_task;
    int64 run;
    int32 coords[4];
};

// the run from task `begin` (one division per dimension, once per share of the launch)
inline void tid_start(thread_ctx& tc, const launch_bounds& b, int64 begin, int64 end) {
    tid_coords(b, begin, tc.coords);
    tc.coords_task = begin;
    const int64 left = b.shape[b.ndim - 1] - tc.coords[b.ndim - 1];
    tc.run = end - begin < left ? end - begin : left;
}
// the run after the current one: the last coordinate back to 0, carrying into the ones before
inline void tid_next_run(thread_ctx& tc, const launch_bounds& b, int64 end) {
    tc.coords_task += tc.run;
    tc.coords[b.ndim - 1] = 0;
    for (int d = b.ndim - 2; d >= 0; --d) {
        if (++tc.coords[d] < b.shape[d] || d == 0) break;
        tc.coords[d] = 0;
    }
    const int64 left = end - tc.coords_task;
    tc.run = left < b.shape[b.ndim - 1] ? left : b.shape[b.ndim - 1];
}
// a body's coords: from the task loop's run when the task is in it, else by division
inline void tid_coords_at(const thread_ctx& tc, const launch_bounds& b, int64 task, int32* out) {
    const uint64 r = uint64(task - tc.coords_task);
    if (__builtin_expect(r < uint64(tc.run), 1)) {
        for (int d = 0; d < 4; ++d) out[d] = tc.coords[d];
        out[b.ndim - 1] += int32(r);
    } else {
        tid_coords(b, task, out);
    }
}
#else
struct thread_ctx {};
#endif

#ifndef WEFT_CUDA
struct kernel_exception {
    kernel_error err;
};

inline void record_error(launch_context* ctx, const kernel_error& e) {
    int32 expected = 0;
    if (__atomic_compare_exchange_n(&ctx->has_error, &expected, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ctx->error = e;
}

// A kernel error ends the launch: thrown here, caught by the entry point (record_error).
inline void raise_kernel_error(const kernel_error& e) { throw kernel_exception{e}; }
#else
// CUDA cannot throw. The entry point stores the launch context's device pointer (may be null) in
// this block-shared slot (every thread of a launch writes the same value, so blocks of concurrent
// launches never see each other's); the first failing thread records its error there with
// atomicCAS on has_error, and every failing thread then ends (PTX `exit`), so a checked access
// never touches memory out of bounds.
__shared__ launch_context* cuda_launch_ctx;

__device__ inline void cuda_set_context(launch_context* ctx) { cuda_launch_ctx = ctx; }

__device__ inline void raise_kernel_error(const kernel_error& e) {
    launch_context* ctx = cuda_launch_ctx;
    if (ctx && atomicCAS(&ctx->has_error, 0, 1) == 0) {
        ctx->error = e;
        __threadfence();
    }
    asm volatile("exit;");
}
#endif

// Out of line and cold on the CPU: the checks inline into every access of a kernel's loop, the
// error path should not.
#ifndef WEFT_CUDA
#define WEFT_COLD_PATH __attribute__((noinline, cold))
#else
#define WEFT_COLD_PATH
#endif
// wp.cast(x, T): the bytes of x read as a T of the same size (checked by the frontend).
template <typename T, typename S>
WEFT_FN T bit_cast(const S& x) {
    static_assert(sizeof(T) == sizeof(S), "wp.cast needs types of the same size");
    T out;
    memcpy(&out, &x, sizeof(T));
    return out;
}

// `assert cond` in a kernel or func (code 5): in debug builds a false condition ends the launch
// and Python raises AssertionError naming the line; release builds (WEFT_RELEASE) drop the test.
WEFT_COLD_PATH WEFT_FN void raise_assert_error(int32 loc) {
    kernel_error e = {};
    e.code = 5;
    e.loc = loc;
    raise_kernel_error(e);
}
WEFT_FN void kernel_assert(bool cond, int32 loc) {
#ifndef WEFT_RELEASE
    if (!cond) raise_assert_error(loc);
#else
    (void)cond;
    (void)loc;
#endif
}

// An index error, from values only (the array's descriptor must not escape from the hot path: a
// kernel body reloads the shape and strides of an escaped descriptor from memory after each of its
// stores, since the store might have changed them). `dim`: the dimension that failed, or -1 for
// the first of the n indices outside the shape; `ndim`: the dimensions of the shape reported.
WEFT_COLD_PATH WEFT_FN void raise_index_error_values(int32 loc, int32 dim, int32 ndim, int32 s0, int32 s1, int32 s2,
                                                     int32 s3, int64 i0, int64 i1, int64 i2, int64 i3, int32 n) {
    const int32 shape[4] = {s0, s1, s2, s3};
    const int64 idx[4] = {i0, i1, i2, i3};
    if (dim < 0) {
        dim = 0;
        while (dim < n - 1 && idx[dim] >= 0 && idx[dim] < shape[dim]) ++dim;
    }
    kernel_error e;
    e.code = 1;
    e.loc = loc;
    e.dim = dim;
    e.ndim = n;
    for (int i = 0; i < 4; ++i) {
        e.index[i] = i < n ? idx[i] : 0;
        e.shape[i] = i < ndim ? shape[i] : -1;  // the whole shape, also for a subarray's a[i]
    }
    raise_kernel_error(e);
}
template <typename T>
WEFT_COLD_PATH WEFT_FN void raise_index_error(const array_t<T>& a, int32 loc, int32 dim, const int64* idx, int32 nidx) {
    raise_index_error_values(loc, dim, a.ndim, a.shape[0], a.shape[1], a.shape[2], a.shape[3], idx[0],
                             nidx > 1 ? idx[1] : 0, nidx > 2 ? idx[2] : 0, nidx > 3 ? idx[3] : 0, nidx);
}

template <typename T>
WEFT_FN void index_error_of(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, int32 n) {
    raise_index_error_values(loc, -1, a.ndim, a.shape[0], a.shape[1], a.shape[2], a.shape[3], i0, i1, i2, i3, n);
}

// Byte offset of an element, with bounds checking unless WEFT_RELEASE is defined.
// Negative indices count from the end, as in Python and Warp.
template <typename T>
WEFT_FN T* elem_ptr(T* base, const array_t<T>& a, int32 loc, int64 i0) {
    if (i0 < 0) i0 += a.shape[0];
#ifndef WEFT_RELEASE
    if (__builtin_expect(uint64(i0) >= uint64(int64(a.shape[0])), 0)) index_error_of(a, loc, i0, 0, 0, 0, 1);
#endif
    return (T*)((char*)base + i0 * a.strides[0]);
}

// One test for all the indices of an access: an index outside [0, shape) is, as unsigned, at
// least the shape.
template <typename T>
WEFT_FN bool any_outside(const array_t<T>& a, int64 i0, int64 i1, int64 i2 = 0, int64 i3 = 0, int n = 2) {
    bool out = (uint64(i0) >= uint64(int64(a.shape[0]))) | (uint64(i1) >= uint64(int64(a.shape[1])));
    if (n > 2) out |= uint64(i2) >= uint64(int64(a.shape[2]));
    if (n > 3) out |= uint64(i3) >= uint64(int64(a.shape[3]));
    return out;
}

template <typename T>
WEFT_FN T* elem_ptr(T* base, const array_t<T>& a, int32 loc, int64 i0, int64 i1) {
    if (i0 < 0) i0 += a.shape[0];
    if (i1 < 0) i1 += a.shape[1];
#ifndef WEFT_RELEASE
    if (__builtin_expect(any_outside(a, i0, i1), 0)) index_error_of(a, loc, i0, i1, 0, 0, 2);
#endif
    return (T*)((char*)base + i0 * a.strides[0] + i1 * a.strides[1]);
}

template <typename T>
WEFT_FN T* elem_ptr(T* base, const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2) {
    if (i0 < 0) i0 += a.shape[0];
    if (i1 < 0) i1 += a.shape[1];
    if (i2 < 0) i2 += a.shape[2];
#ifndef WEFT_RELEASE
    if (__builtin_expect(any_outside(a, i0, i1, i2, 0, 3), 0)) index_error_of(a, loc, i0, i1, i2, 0, 3);
#endif
    return (T*)((char*)base + i0 * a.strides[0] + i1 * a.strides[1] + i2 * a.strides[2]);
}

template <typename T>
WEFT_FN T* elem_ptr(T* base, const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3) {
    if (i0 < 0) i0 += a.shape[0];
    if (i1 < 0) i1 += a.shape[1];
    if (i2 < 0) i2 += a.shape[2];
    if (i3 < 0) i3 += a.shape[3];
#ifndef WEFT_RELEASE
    if (__builtin_expect(any_outside(a, i0, i1, i2, i3, 4), 0)) index_error_of(a, loc, i0, i1, i2, i3, 4);
#endif
    return (T*)((char*)base + i0 * a.strides[0] + i1 * a.strides[1] + i2 * a.strides[2] + i3 * a.strides[3]);
}

// ---------------------------------------------------------------------------------------------
// Atomics. Integer types use the compiler's atomic builtins; floating types use compare-and-swap
// on their bit pattern. All return the previous value.
#ifndef WEFT_CUDA
template <typename T>
struct bits_of;
template <>
struct bits_of<float> {
    typedef uint32_t type;
};
template <>
struct bits_of<double> {
    typedef uint64_t type;
};
template <>
struct bits_of<float16> {
    typedef uint16_t type;
};
template <>
struct bits_of<bfloat16> {
    typedef uint16_t type;
};

template <typename T, typename F>
inline T atomic_update_float(T* p, F op) {
    typedef typename bits_of<T>::type B;
    B* bp = (B*)p;
    B old_bits = __atomic_load_n(bp, __ATOMIC_RELAXED);
    for (;;) {
        T old_val;
        memcpy(&old_val, &old_bits, sizeof(T));
        T new_val = op(old_val);
        B new_bits;
        memcpy(&new_bits, &new_val, sizeof(T));
        if (new_bits == old_bits) return old_val;
        if (__atomic_compare_exchange_n(bp, &old_bits, new_bits, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return old_val;
    }
}

template <typename T>
inline T atomic_add_raw(T* p, T v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline float atomic_add_raw(float* p, float v) {
    if (serial_launch) {
        float old = *p;
        *p = old + v;
        return old;
    }
    return atomic_update_float(p, [v](float o) { return o + v; });
}
inline double atomic_add_raw(double* p, double v) {
    if (serial_launch) {
        double old = *p;
        *p = old + v;
        return old;
    }
    return atomic_update_float(p, [v](double o) { return o + v; });
}
inline float16 atomic_add_raw(float16* p, float16 v) {
    return atomic_update_float(p, [v](float16 o) { return float16(float(o) + float(v)); });
}
inline bfloat16 atomic_add_raw(bfloat16* p, bfloat16 v) {
    return atomic_update_float(p, [v](bfloat16 o) { return bfloat16(float(o) + float(v)); });
}
inline bool atomic_add_raw(bool* p, bool v) {
    bool o = *p;
    *p = o || v;
    return o;
}

template <typename T>
inline T atomic_min_raw(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
template <typename T>
inline T atomic_max_raw(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
inline float atomic_min_raw(float* p, float v) {
    return atomic_update_float(p, [v](float o) { return v < o || o != o ? v : o; });
}
inline double atomic_min_raw(double* p, double v) {
    return atomic_update_float(p, [v](double o) { return v < o || o != o ? v : o; });
}
inline float atomic_max_raw(float* p, float v) {
    return atomic_update_float(p, [v](float o) { return v > o || o != o ? v : o; });
}
inline double atomic_max_raw(double* p, double v) {
    return atomic_update_float(p, [v](double o) { return v > o || o != o ? v : o; });
}
inline float16 atomic_min_raw(float16* p, float16 v) {
    return atomic_update_float(p, [v](float16 o) { return float(v) < float(o) || float(o) != float(o) ? v : o; });
}
inline float16 atomic_max_raw(float16* p, float16 v) {
    return atomic_update_float(p, [v](float16 o) { return float(v) > float(o) || float(o) != float(o) ? v : o; });
}
inline bfloat16 atomic_min_raw(bfloat16* p, bfloat16 v) {
    return atomic_update_float(p, [v](bfloat16 o) { return float(v) < float(o) || float(o) != float(o) ? v : o; });
}
inline bfloat16 atomic_max_raw(bfloat16* p, bfloat16 v) {
    return atomic_update_float(p, [v](bfloat16 o) { return float(v) > float(o) || float(o) != float(o) ? v : o; });
}

// exchange, compare-and-swap (bit for bit, as the hardware compares) and the bitwise atomics, on
// the unsigned integer of the value's size. Sequentially consistent: a spin lock built from
// atomic_cas / atomic_exch orders the plain reads and writes it guards.
template <int N>
struct uint_of_size;
template <>
struct uint_of_size<1> {
    typedef uint8_t type;
};
template <>
struct uint_of_size<2> {
    typedef uint16_t type;
};
template <>
struct uint_of_size<4> {
    typedef uint32_t type;
};
template <>
struct uint_of_size<8> {
    typedef uint64_t type;
};

template <typename T>
inline T atomic_exch_raw(T* p, T v) {
    typedef typename uint_of_size<sizeof(T)>::type B;
    B nb, ob;
    memcpy(&nb, &v, sizeof(T));
    ob = __atomic_exchange_n((B*)p, nb, __ATOMIC_SEQ_CST);
    T old;
    memcpy(&old, &ob, sizeof(T));
    return old;
}
template <typename T>
inline T atomic_cas_raw(T* p, T compare, T v) {
    typedef typename uint_of_size<sizeof(T)>::type B;
    B cb, nb;
    memcpy(&cb, &compare, sizeof(T));
    memcpy(&nb, &v, sizeof(T));
    __atomic_compare_exchange_n((B*)p, &cb, nb, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    T old;  // what the element held: compare on success, the current value on failure
    memcpy(&old, &cb, sizeof(T));
    return old;
}
template <typename T>
inline T atomic_and_raw(T* p, T v) {
    return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
}
template <typename T>
inline T atomic_or_raw(T* p, T v) {
    return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
}
template <typename T>
inline T atomic_xor_raw(T* p, T v) {
    return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
}
#else
// CUDA: hardware atomics where they exist (add on int32/uint32/uint64/float/double, min/max on
// 32/64-bit ints); everything else (float min/max, float16, 8/16-bit ints, bool) is a
// compare-and-swap loop, on the containing aligned 32-bit word for types narrower than 4 bytes.
template <typename T>
struct atomic_op_add {
    T v;
    __device__ T operator()(T o) const { return T(o + v); }
};
template <>
struct atomic_op_add<float16> {
    float16 v;
    __device__ float16 operator()(float16 o) const { return float16(float(o) + float(v)); }
};
template <>
struct atomic_op_add<bfloat16> {
    bfloat16 v;
    __device__ bfloat16 operator()(bfloat16 o) const { return bfloat16(float(o) + float(v)); }
};
template <>
struct atomic_op_add<bool> {
    bool v;
    __device__ bool operator()(bool o) const { return o || v; }
};
template <typename T>
struct atomic_op_min {
    T v;
    __device__ T operator()(T o) const { return float64(v) < float64(o) || float64(o) != float64(o) ? v : o; }
};
template <typename T>
struct atomic_op_max {
    T v;
    __device__ T operator()(T o) const { return float64(v) > float64(o) || float64(o) != float64(o) ? v : o; }
};

// A thread's local memory (a wp.zeros array made inside the kernel, passed on to funcs as an array)
// can be the target of an atomic, where the hardware atomics are undefined; no other thread sees
// that memory, so a plain read-modify-write is the atomic. Every atomic below starts with this.
template <typename T, typename Op>
__device__ inline bool local_update(T* p, Op op, T& old) {
    if (!__isLocal(p)) return false;
    old = *p;
    *p = op(old);
    return true;
}
#define WEFT_LOCAL_ATOMIC(T, p, op)                    \
    do {                                               \
        T old_;                                        \
        if (local_update(p, op, old_)) return old_;    \
    } while (0)

// CAS loop on a 4- or 8-byte word W holding the whole value; returns the previous value.
template <typename W, typename T, typename Op>
__device__ inline T atomic_cas_word(T* p, Op op) {
    W* wp = (W*)p;
    W old = *(volatile W*)wp;
    for (;;) {
        T o, n;
        memcpy(&o, &old, sizeof(T));
        n = op(o);
        W nw;
        memcpy(&nw, &n, sizeof(T));
        if (nw == old) return o;
        W prev = atomicCAS(wp, old, nw);
        if (prev == old) return o;
        old = prev;
    }
}

// CAS loop for 1- and 2-byte values: swap the aligned 32-bit word that contains them.
template <typename T, typename Op>
__device__ inline T atomic_cas_subword(T* p, Op op) {
    unsigned long long addr = (unsigned long long)p;
    unsigned int* wp = (unsigned int*)(addr & ~3ull);
    unsigned int shift = unsigned(addr & 3ull) * 8u;
    unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    unsigned int old = *(volatile unsigned int*)wp;
    for (;;) {
        unsigned int ob = (old & mask) >> shift, nb = 0;
        T o, n;
        memcpy(&o, &ob, sizeof(T));  // little-endian: the low bytes hold the value
        n = op(o);
        memcpy(&nb, &n, sizeof(T));
        unsigned int nw = (old & ~mask) | ((nb << shift) & mask);
        if (nw == old) return o;
        unsigned int prev = atomicCAS(wp, old, nw);
        if (prev == old) return o;
        old = prev;
    }
}

template <typename T, typename Op>
__device__ inline T atomic_update(T* p, Op op) {
    WEFT_LOCAL_ATOMIC(T, p, op);
    if constexpr (sizeof(T) == 8)
        return atomic_cas_word<unsigned long long>(p, op);
    else if constexpr (sizeof(T) == 4)
        return atomic_cas_word<unsigned int>(p, op);
    else
        return atomic_cas_subword(p, op);
}

template <typename T>
__device__ inline T atomic_add_raw(T* p, T v) {
    return atomic_update(p, atomic_op_add<T>{v});
}
// The hardware atomics: NAME(T* p, T v) as the CUDA intrinsic HW on the same bits read as W (an
// int64 adds as unsigned: two's complement), after the local-memory check.
#define WEFT_HW_ATOMIC(NAME, OP, T, HW, W)           \
    __device__ inline T NAME(T* p, T v) {            \
        WEFT_LOCAL_ATOMIC(T, p, OP<T>{v});           \
        return (T)HW((W*)p, (W)v);                   \
    }
WEFT_HW_ATOMIC(atomic_add_raw, atomic_op_add, float, atomicAdd, float)
WEFT_HW_ATOMIC(atomic_add_raw, atomic_op_add, int32, atomicAdd, int)
WEFT_HW_ATOMIC(atomic_add_raw, atomic_op_add, uint32, atomicAdd, unsigned int)
WEFT_HW_ATOMIC(atomic_add_raw, atomic_op_add, uint64, atomicAdd, unsigned long long)
WEFT_HW_ATOMIC(atomic_add_raw, atomic_op_add, int64, atomicAdd, unsigned long long)
WEFT_HW_ATOMIC(atomic_min_raw, atomic_op_min, int32, atomicMin, int)
WEFT_HW_ATOMIC(atomic_min_raw, atomic_op_min, uint32, atomicMin, unsigned int)
WEFT_HW_ATOMIC(atomic_min_raw, atomic_op_min, int64, atomicMin, long long)
WEFT_HW_ATOMIC(atomic_min_raw, atomic_op_min, uint64, atomicMin, unsigned long long)
WEFT_HW_ATOMIC(atomic_max_raw, atomic_op_max, int32, atomicMax, int)
WEFT_HW_ATOMIC(atomic_max_raw, atomic_op_max, uint32, atomicMax, unsigned int)
WEFT_HW_ATOMIC(atomic_max_raw, atomic_op_max, int64, atomicMax, long long)
WEFT_HW_ATOMIC(atomic_max_raw, atomic_op_max, uint64, atomicMax, unsigned long long)
__device__ inline double atomic_add_raw(double* p, double v) {
    WEFT_LOCAL_ATOMIC(double, p, atomic_op_add<double>{v});
#if __CUDA_ARCH__ >= 600
    return atomicAdd(p, v);
#else
    return atomic_update(p, atomic_op_add<double>{v});
#endif
}

template <typename T>
__device__ inline T atomic_min_raw(T* p, T v) {
    return atomic_update(p, atomic_op_min<T>{v});
}
template <typename T>
__device__ inline T atomic_max_raw(T* p, T v) {
    return atomic_update(p, atomic_op_max<T>{v});
}

// exchange, compare-and-swap (bit for bit) and the bitwise atomics: the hardware's on 4- and 8-byte
// words, a compare-and-swap loop on the containing word for narrower types.
template <typename T>
struct atomic_op_set {
    T v;
    __device__ T operator()(T) const { return v; }
};
template <typename T>
struct atomic_op_cas {
    T compare, v;
    __device__ T operator()(T o) const {
        unsigned long long a = 0, b = 0;  // compared bit for bit
        memcpy(&a, &o, sizeof(T));
        memcpy(&b, &compare, sizeof(T));
        return a == b ? v : o;
    }
};
template <typename T>
struct atomic_op_and {
    T v;
    __device__ T operator()(T o) const { return T(o & v); }
};
template <typename T>
struct atomic_op_or {
    T v;
    __device__ T operator()(T o) const { return T(o | v); }
};
template <typename T>
struct atomic_op_xor {
    T v;
    __device__ T operator()(T o) const { return T(o ^ v); }
};

template <typename T>
__device__ inline T atomic_exch_raw(T* p, T v) {
    WEFT_LOCAL_ATOMIC(T, p, atomic_op_set<T>{v});
    if constexpr (sizeof(T) == 4) {
        unsigned int nb, ob;
        memcpy(&nb, &v, 4);
        ob = atomicExch((unsigned int*)p, nb);
        T old;
        memcpy(&old, &ob, 4);
        return old;
    } else if constexpr (sizeof(T) == 8) {
        unsigned long long nb, ob;
        memcpy(&nb, &v, 8);
        ob = atomicExch((unsigned long long*)p, nb);
        T old;
        memcpy(&old, &ob, 8);
        return old;
    } else {
        return atomic_update(p, atomic_op_set<T>{v});
    }
}
template <typename T>
__device__ inline T atomic_cas_raw(T* p, T compare, T v) {
    WEFT_LOCAL_ATOMIC(T, p, (atomic_op_cas<T>{compare, v}));
    if constexpr (sizeof(T) == 4) {
        unsigned int cb, nb, ob;
        memcpy(&cb, &compare, 4);
        memcpy(&nb, &v, 4);
        ob = atomicCAS((unsigned int*)p, cb, nb);
        T old;
        memcpy(&old, &ob, 4);
        return old;
    } else if constexpr (sizeof(T) == 8) {
        unsigned long long cb, nb, ob;
        memcpy(&cb, &compare, 8);
        memcpy(&nb, &v, 8);
        ob = atomicCAS((unsigned long long*)p, cb, nb);
        T old;
        memcpy(&old, &ob, 8);
        return old;
    } else {
        return atomic_update(p, atomic_op_cas<T>{compare, v});
    }
}
template <typename T>
__device__ inline T atomic_and_raw(T* p, T v) {
    return atomic_update(p, atomic_op_and<T>{v});
}
template <typename T>
__device__ inline T atomic_or_raw(T* p, T v) {
    return atomic_update(p, atomic_op_or<T>{v});
}
template <typename T>
__device__ inline T atomic_xor_raw(T* p, T v) {
    return atomic_update(p, atomic_op_xor<T>{v});
}
WEFT_HW_ATOMIC(atomic_and_raw, atomic_op_and, int32, atomicAnd, int)
WEFT_HW_ATOMIC(atomic_and_raw, atomic_op_and, uint32, atomicAnd, unsigned int)
WEFT_HW_ATOMIC(atomic_or_raw, atomic_op_or, int32, atomicOr, int)
WEFT_HW_ATOMIC(atomic_or_raw, atomic_op_or, uint32, atomicOr, unsigned int)
WEFT_HW_ATOMIC(atomic_xor_raw, atomic_op_xor, int32, atomicXor, int)
WEFT_HW_ATOMIC(atomic_xor_raw, atomic_op_xor, uint32, atomicXor, unsigned int)
#endif

}  // namespace weft
