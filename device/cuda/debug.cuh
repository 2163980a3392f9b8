// T.print and T.device_assert for generated CUDA code: the same entry points as
// the CPU's device/cpu/debug.h, on device printf. Each line starts with the block
// and thread; a tile is printed by the one thread that runs the block-wide op.
#pragma once

namespace tl {

template <class T>
TL_DEVICE double debug_as_double(const T& v) {
  return double(float(v));
}
TL_DEVICE double debug_as_double(double v) {
  return v;
}
TL_DEVICE double debug_as_double(int64_t v) {
  return double(v);
}
TL_DEVICE double debug_as_double(int32_t v) {
  return double(v);
}

template <class T>
TL_DEVICE void debug_print_value(const char* msg, int64_t bx, int64_t by, int64_t bz, int64_t, int64_t, T value) {
  printf("[block (%lld, %lld, %lld), thread (%d, %d, %d)] %s: %.9g\n", (long long)bx, (long long)by, (long long)bz,
         int(threadIdx.x), int(threadIdx.y), int(threadIdx.z), msg, debug_as_double(value));
}

TL_DEVICE void debug_print_msg(const char* msg, int64_t bx, int64_t by, int64_t bz, int64_t, int64_t) {
  printf("[block (%lld, %lld, %lld), thread (%d, %d, %d)] %s\n", (long long)bx, (long long)by, (long long)bz,
         int(threadIdx.x), int(threadIdx.y), int(threadIdx.z), msg);
}

TL_DEVICE void debug_print_buffer_begin(const char* header, int64_t bx, int64_t by, int64_t bz, int64_t, int64_t) {
  printf("[block (%lld, %lld, %lld), thread (%d, %d, %d)] %s", (long long)bx, (long long)by, (long long)bz,
         int(threadIdx.x), int(threadIdx.y), int(threadIdx.z), header);
}

template <class... Index>
TL_DEVICE void debug_print_buffer_row(const char* name, const char* last, Index... index) {
  printf("\n  %s[", name);
  ((printf("%lld, ", (long long)index)), ...);
  printf("%s] =", last);
}

template <class T>
TL_DEVICE void debug_print_buffer_elem(T value) {
  printf(" %.9g", debug_as_double(value));
}

TL_DEVICE void debug_print_buffer_end() {
  printf("\n");
}

// A failed T.device_assert stops the kernel, as CUDA's assert does; the launch then
// reports the driver's error.
TL_DEVICE void device_assert_fail(const char* msg) {
#ifdef TL_EMULATE
  ::tl::emu::record_failure(msg);
  return;
#endif
  printf("[block (%d, %d, %d), thread (%d, %d, %d)] device assertion failed: %s\n", int(blockIdx.x), int(blockIdx.y),
         int(blockIdx.z), int(threadIdx.x), int(threadIdx.y), int(threadIdx.z), msg);
  __trap();
}

}  // namespace tl
