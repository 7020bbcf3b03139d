#pragma once
// GPU selection, the per-GPU locks and the GPU monitor live in src/gpu (the
// kernel jobs use them too); the serving code names them as before.
#include "gpu/gpu_lock.hpp"
#include "gpu/gpu_monitor.hpp"
#include "gpu/gpu_selection.hpp"

namespace magpie::serve {

using gpu::FieldRange;
using gpu::gpu_lock_key;
using gpu::GpuFieldSummary;
using gpu::GpuInventory;
using gpu::GpuInventoryEntry;
using gpu::GpuLocks;
using gpu::GpuMonitor;
using gpu::GpuMonitorConfig;
using gpu::GpuMonitorSummary;
using gpu::GpuSampleRow;
using gpu::GpuSelection;
using gpu::GpuSelectionConfig;
using gpu::query_gpu_inventory;
using gpu::select_gpus;

}  // namespace magpie::serve
