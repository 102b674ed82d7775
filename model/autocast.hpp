// torch's autocast state per device type, through whichever interface the libtorch in use has:
// 2.4 replaced the per-device functions (is_cpu_enabled, set_autocast_gpu_dtype, ...) with ones
// that take the device type, and deprecated the old ones.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace shardgnn::autocast {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
inline bool enabled(c10::DeviceType t) { return at::autocast::is_autocast_enabled(t); }
inline void set_enabled(c10::DeviceType t, bool on) { at::autocast::set_autocast_enabled(t, on); }
inline at::ScalarType dtype(c10::DeviceType t) { return at::autocast::get_autocast_dtype(t); }
inline void set_dtype(c10::DeviceType t, at::ScalarType d) { at::autocast::set_autocast_dtype(t, d); }
#else
inline bool enabled(c10::DeviceType t) { return t == c10::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled(); }
inline void set_enabled(c10::DeviceType t, bool on) { t == c10::kCPU ? at::autocast::set_cpu_enabled(on) : at::autocast::set_enabled(on); }
inline at::ScalarType dtype(c10::DeviceType t) { return t == c10::kCPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype(); }
inline void set_dtype(c10::DeviceType t, at::ScalarType d) { t == c10::kCPU ? at::autocast::set_autocast_cpu_dtype(d) : at::autocast::set_autocast_gpu_dtype(d); }
#endif

}  // namespace shardgnn::autocast
