// Loop checkpoints of backward bodies: the values a dynamic loop's carried variables had at the
// start of each iteration (emit.py renders `weft::loop_stack<T> loop_N_stackK` with clear,
// reserve, push_back and []). The first values live in the object itself, so short loops never
// allocate, and neither does a thread per task; longer loops grow on the heap (the device heap
// on CUDA). Running out of heap is a kernel error (code 3, no source location), not a write
// through a null pointer.
#pragma once
#include "core.h"
#ifndef __CUDACC_RTC__
#include <stdlib.h>
#endif

namespace weft {

template <typename T>
struct loop_stack {
    static constexpr int64 INLINE = sizeof(T) >= 128 ? 4 : 512 / int64(sizeof(T));
    T* data;
    int64 n, cap;
    alignas(T) unsigned char local[INLINE * sizeof(T)];

    WEFT_FN loop_stack() : data((T*)local), n(0), cap(INLINE) {}
    WEFT_FN ~loop_stack() {
        if (data != (T*)local) free(data);
    }
    loop_stack(const loop_stack&) = delete;
    loop_stack& operator=(const loop_stack&) = delete;

    WEFT_FN void clear() { n = 0; }
    WEFT_FN void reserve(int64 c) {
        if (c > cap) grow(c);
    }
    WEFT_FN void push_back(const T& v) {
        if (n == cap) grow(2 * cap);
        memcpy((void*)(data + n), (const void*)&v, sizeof(T));
        ++n;
    }
    WEFT_FN T& operator[](int64 i) { return data[i]; }

    WEFT_FN void grow(int64 c) {
        T* p = (T*)malloc(size_t(c) * sizeof(T));
        if (!p) {
            kernel_error e = {};
            e.code = 3;
            e.loc = -1;
            e.index[0] = c * int64(sizeof(T));
            raise_kernel_error(e);
            return;
        }
        if (n) memcpy((void*)p, (const void*)data, size_t(n) * sizeof(T));
        if (data != (T*)local) free(data);
        data = p;
        cap = c;
    }
};

}  // namespace weft
