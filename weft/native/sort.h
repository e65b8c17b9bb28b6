// Stable LSD radix sort of (32-bit key, 32-bit value) pairs for wp.utils.radix_sort_pairs on the
// CPU. Part of the runtime (runtime.cpp includes it), so it is compiled once, at install time.
//
// Keys are sorted by an order-preserving digit function of their bits, so the original keys move
// with their values and no transform or inverse pass is needed:
//   KEY_UNSIGNED: the bits [begin_bit, end_bit) as an unsigned number;
//   KEY_SIGNED:   two's complement order (the sign bit flipped), all 32 bits;
//   KEY_FLOAT:    IEEE order (negative values reversed), all 32 bits; -0.0 sorts before +0.0 and
//                 NaNs sort at the ends by their sign bit.
// One read computes the histograms of every 8-bit digit; a pass whose digit is the same for all
// keys is skipped (keys below 2^24 need three passes, not four).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace weft_sort {

enum KeyKind { KEY_UNSIGNED = 0, KEY_SIGNED = 1, KEY_FLOAT = 2 };

inline uint32_t ordered_bits(uint32_t u, int kind) {
    if (kind == KEY_SIGNED) return u ^ 0x80000000u;
    if (kind == KEY_FLOAT) return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return u;
}

// The scratch space of a sort (n keys, then n values). Up to KEEP_BYTES it is kept for the next
// sort: fresh memory costs a page fault per 4 KiB on first touch, which on this VM took longer
// than the sort itself (3 ms for 8 MB). A sort that finds the kept space in use (another thread
// sorting) or too small for the limit allocates its own.
class Scratch {
   public:
    static constexpr size_t KEEP_BYTES = size_t(64) << 20;
    explicit Scratch(size_t bytes) : bytes_(bytes) {}
    ~Scratch() {
        if (kept_) {
            lock_.unlock();
        } else {
            free(ptr_);
        }
    }
    uint32_t* get() {
        if (ptr_) return ptr_;
        if (bytes_ <= KEEP_BYTES && lock_.try_lock()) {
            if (kept_bytes_ < bytes_) {
                free(kept_ptr_);
                kept_ptr_ = (uint32_t*)malloc(bytes_);
                kept_bytes_ = kept_ptr_ ? bytes_ : 0;
            }
            if (kept_ptr_) {
                kept_ = true;
                return ptr_ = kept_ptr_;
            }
            lock_.unlock();
        }
        return ptr_ = (uint32_t*)malloc(bytes_);
    }

   private:
    size_t bytes_;
    uint32_t* ptr_ = nullptr;
    bool kept_ = false;
    static inline uint32_t* kept_ptr_ = nullptr;  // guarded by lock_
    static inline size_t kept_bytes_ = 0;
    static inline std::mutex lock_;
};

template <int KIND>
inline bool radix_sort_pairs32_kind(uint32_t* keys, uint32_t* values, int64_t n, int begin_bit, int end_bit) {
    const int kind = KIND;  // a constant: the digit function compiles without a branch on the kind
    int bits = end_bit - begin_bit;
    if (bits <= 0) return true;
    int passes = (bits + 7) / 8;
    uint32_t last_mask = bits % 8 ? (1u << (bits % 8)) - 1 : 0xFFu;

    static_assert(sizeof(size_t) >= 8, "64-bit counts");
    size_t (*counts)[256] = (size_t(*)[256])calloc(size_t(passes) * 256, sizeof(size_t));
    if (!counts) return false;
    for (int64_t i = 0; i < n; ++i) {
        uint32_t s = ordered_bits(keys[i], kind) >> begin_bit;
        for (int p = 0; p < passes; ++p) counts[p][(s >> (8 * p)) & (p == passes - 1 ? last_mask : 0xFFu)]++;
    }
    Scratch space(size_t(n) * 2 * sizeof(uint32_t));
    uint32_t* scratch = nullptr;
    uint32_t *src_k = keys, *src_v = values, *dst_k = nullptr, *dst_v = nullptr;
    for (int p = 0; p < passes; ++p) {
        uint32_t mask = p == passes - 1 ? last_mask : 0xFFu;
        bool trivial = false;
        for (int d = 0; d < 256; ++d)
            if (counts[p][d] == size_t(n)) trivial = true;
        if (trivial) continue;  // every key has the same digit: the order stays
        if (!scratch) {
            scratch = space.get();
            if (!scratch) {
                free(counts);
                return false;
            }
        }
        if (src_k == keys) {
            dst_k = scratch, dst_v = scratch + n;
        } else {
            dst_k = keys, dst_v = values;
        }
        size_t offset[256];
        size_t sum = 0;
        for (int d = 0; d < 256; ++d) {
            offset[d] = sum;
            sum += counts[p][d];
        }
        int shift = begin_bit + 8 * p;
        for (int64_t i = 0; i < n; ++i) {
            uint32_t k = src_k[i];
            size_t at = offset[(ordered_bits(k, kind) >> shift) & mask]++;
            dst_k[at] = k;
            dst_v[at] = src_v[i];
        }
        src_k = dst_k, src_v = dst_v;
    }
    if (src_k != keys) {
        memcpy(keys, src_k, size_t(n) * sizeof(uint32_t));
        memcpy(values, src_v, size_t(n) * sizeof(uint32_t));
    }
    free(counts);
    return true;
}

// Sorts n pairs in place; returns false when the scratch memory could not be allocated.
inline bool radix_sort_pairs32(uint32_t* keys, uint32_t* values, int64_t n, int kind, int begin_bit, int end_bit) {
    if (n <= 1) return true;
    begin_bit = begin_bit < 0 ? 0 : begin_bit;
    end_bit = end_bit > 32 ? 32 : end_bit;
    if (kind == KEY_SIGNED) return radix_sort_pairs32_kind<KEY_SIGNED>(keys, values, n, 0, 32);
    if (kind == KEY_FLOAT) return radix_sort_pairs32_kind<KEY_FLOAT>(keys, values, n, 0, 32);
    return radix_sort_pairs32_kind<KEY_UNSIGNED>(keys, values, n, begin_bit, end_bit);
}

}  // namespace weft_sort
