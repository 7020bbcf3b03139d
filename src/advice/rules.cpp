#include "advice/rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "analysis/gpu_arch.hpp"

namespace magpie::advice {

namespace {

std::string pct_text(double share) { return fmt::format("{:.0f}%", 100 * share); }
// Milliseconds without an exponent: "0.1", "44.2", "1223".
std::string ms_text(double us) {
  const double ms = us / 1e3;
  return ms >= 100 ? fmt::format("{:.0f}", ms) : fmt::format("{:.3g}", ms);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

void put(std::map<std::string, double>& f, const std::string& key, const std::optional<double>& v) {
  if (v) f[key] = *v;
}

}  // namespace

RidgeBand fp32_ridge_band() {
  static const RidgeBand band = [] {
    RidgeBand b{std::numeric_limits<double>::max(), 0};
    for (const auto& arch : analysis::builtin_gpu_archs()) {
      auto it = arch.vector_tflops.find("fp32");
      if (it == arch.vector_tflops.end() || arch.mem_bw_tbps <= 0) continue;
      const double ridge = it->second / arch.mem_bw_tbps;
      b.low = std::min(b.low, ridge);
      b.high = std::max(b.high, ridge);
    }
    return b;
  }();
  return band;
}

std::optional<Bottleneck> roofline_bottleneck(const RooflineObservation& o,
                                              std::optional<Bottleneck>* no_data) {
  auto missing = [&](std::string evidence,
                     std::map<std::string, double> figures) -> std::optional<Bottleneck> {
    if (no_data)
      *no_data = Bottleneck{BottleneckKind::kNoData, o.subject, 0, std::move(evidence),
                            std::move(figures)};
    return std::nullopt;
  };
  const auto& ai = o.arithmetic_intensity;
  std::optional<double> ridge;
  if (o.peak_tflops && o.peak_tbps && *o.peak_tbps > 0) ridge = *o.peak_tflops / *o.peak_tbps;
  std::string bound = o.bound;
  std::string ridge_text;  // "below ridge 206" / "above every known GPU's fp32 ridge (max 19.6)"
  if (bound.empty()) {
    if (!ai) {
      return missing(
          "no bytes or FLOPs were measured, so the kernel cannot be placed on the roofline", {});
    }
    if (ridge) {
      bound = *ai < *ridge ? "memory" : "compute";
    } else {
      const RidgeBand band = fp32_ridge_band();
      if (*ai < band.low) {
        bound = "memory";
        ridge_text =
            fmt::format("below every known GPU's fp32 ridge (min {:.3g} FLOP/B)", band.low);
      } else if (*ai > band.high) {
        bound = "compute";
        ridge_text =
            fmt::format("above every known GPU's fp32 ridge (max {:.3g} FLOP/B)", band.high);
      } else {
        return missing(
            fmt::format(
                "arithmetic intensity {:.3g} FLOP/B lies between the known GPUs' fp32 ridge "
                "points ({:.3g}–{:.3g}) and no compute peak was given",
                *ai, band.low, band.high),
            {{"arithmetic_intensity", *ai}, {"ridge_low", band.low}, {"ridge_high", band.high}});
      }
    }
  }
  const bool memory = bound == "memory";
  if (ridge_text.empty() && ai && ridge) {
    ridge_text = fmt::format("{} ridge {:.3g} FLOP/B", memory ? "below" : "above", *ridge);
  }

  std::optional<double> pct = o.pct_of_roof;
  if (!pct && memory && o.achieved_tbps && o.peak_tbps && *o.peak_tbps > 0)
    pct = 100 * *o.achieved_tbps / *o.peak_tbps;
  if (!pct && !memory && o.achieved_tflops && o.peak_tflops && *o.peak_tflops > 0) {
    pct = 100 * *o.achieved_tflops / *o.peak_tflops;
  }
  const double headroom = pct ? 1 - std::clamp(*pct, 0.0, 100.0) / 100 : kUnknownHeadroomSeverity;
  const double severity = std::clamp(o.time_share, 0.0, 1.0) * headroom;
  if (severity < kMinRooflineSeverity) return std::nullopt;

  Bottleneck b;
  b.subject = o.subject;
  b.severity = severity;
  b.kind = pct && *pct < kLowRoofPct ? BottleneckKind::kLowOccupancyOrLatency
           : memory                  ? BottleneckKind::kMemoryBound
                                     : BottleneckKind::kComputeBound;
  std::string achieved;
  if (memory) {
    achieved = o.achieved_tbps ? fmt::format("achieved {:.3g} TB/s", *o.achieved_tbps)
                               : "bandwidth not measured";
    if (o.peak_tbps) achieved += fmt::format(" of {:.3g} TB/s peak", *o.peak_tbps);
  } else {
    achieved = o.achieved_tflops ? fmt::format("achieved {:.3g} TFLOP/s", *o.achieved_tflops)
                                 : "FLOP/s not measured";
    if (o.peak_tflops) {
      achieved += fmt::format(" of {:.3g} TFLOP/s{} peak", *o.peak_tflops,
                              o.compute_spec.empty() ? "" : " " + o.compute_spec);
    } else {
      achieved += " (compute peak unknown: set performance.peak_tflops)";
    }
  }
  if (pct && b.kind != BottleneckKind::kLowOccupancyOrLatency)
    achieved += fmt::format(" ({:.0f}%)", *pct);
  std::string evidence =
      b.kind == BottleneckKind::kLowOccupancyOrLatency
          ? fmt::format("{}-bound by arithmetic intensity but only {:.1f}% of that roof: {}", bound,
                        *pct, achieved)
          : achieved;
  if (ai) evidence += fmt::format(", AI {:.3g} FLOP/B", *ai);
  if (!ridge_text.empty()) evidence += " " + ridge_text;
  if (o.time_share < 1) evidence += fmt::format("; {:.1f}% of the time", 100 * o.time_share);
  b.evidence = std::move(evidence);
  put(b.figures, "arithmetic_intensity", ai);
  put(b.figures, "achieved_tbps", o.achieved_tbps);
  put(b.figures, "peak_tbps", o.peak_tbps);
  put(b.figures, "achieved_tflops", o.achieved_tflops);
  put(b.figures, "peak_tflops", o.peak_tflops);
  put(b.figures, "pct_of_roof", pct);
  put(b.figures, "ridge_flop_per_byte", ridge);
  b.figures["time_share"] = o.time_share;
  return b;
}

std::optional<Bottleneck> launch_bottleneck(const LaunchObservation& o) {
  double launches = 0, busy = 0, short_launches = 0, waiting = 0, wall = 0;
  for (const auto& [n, mean_us] : o.rows) {
    if (n <= 0) continue;
    launches += n;
    busy += n * mean_us;
    if (mean_us < kLaunchCostUs) short_launches += n;
    waiting += n * std::max(0.0, kLaunchCostUs - mean_us);
    wall += n * std::max(mean_us, kLaunchCostUs);
  }
  if (launches <= 0 || launches < o.min_launches || wall <= 0) return std::nullopt;
  const double graph = std::clamp(o.graph_share, 0.0, 1.0);
  const double severity = waiting / wall * (1 - graph);
  if (severity < kMinLaunchSeverity) return std::nullopt;
  const double mean = busy / launches;
  Bottleneck b{BottleneckKind::kLaunchBound, o.subject, severity, "", {}};
  b.evidence = fmt::format(
      "{:.0f} launch(es), mean {:.3g} µs, {} shorter than {:.0f} µs: at ~{:.0f} µs of host time "
      "per launch the GPU "
      "waits an estimated {} of the time",
      launches, mean, pct_text(short_launches / launches), kLaunchCostUs, kLaunchCostUs,
      pct_text(severity));
  if (graph > 0)
    b.evidence +=
        fmt::format(" ({} of launches replayed from graphs, not counted)", pct_text(graph));
  b.figures = {{"launches", launches},
               {"mean_kernel_us", mean},
               {"short_launch_share", short_launches / launches},
               {"graph_share", graph},
               {"estimated_wait_share", severity}};
  return b;
}

std::vector<Bottleneck> timeline_bottlenecks(const TimelineObservation& o) {
  std::vector<Bottleneck> out;
  if (o.span_us <= 0) return out;
  const double comm = o.exposed_communication_us / o.span_us;
  const double idle = o.idle_us / o.span_us;
  std::map<std::string, double> figures{{"span_us", o.span_us},
                                        {"busy_us", o.busy_us},
                                        {"idle_us", o.idle_us},
                                        {"computation_us", o.computation_us},
                                        {"exposed_communication_us", o.exposed_communication_us}};
  if (comm >= kMinExposedCommShare) {
    auto f = figures;
    f["exposed_communication_share"] = comm;
    out.push_back(
        {BottleneckKind::kExposedCommunication, o.subject, comm,
         fmt::format("{}: {} ms of {} ms ({}) is communication not overlapped by computation",
                     o.subject, ms_text(o.exposed_communication_us), ms_text(o.span_us),
                     pct_text(comm)),
         std::move(f)});
  }
  if (idle >= kMinIdleShare) {
    auto f = figures;
    f["idle_share"] = idle;
    out.push_back({BottleneckKind::kIdleGpu, o.subject, idle,
                   fmt::format("{}: the GPU is idle {} ms of the {} ms span ({})", o.subject,
                               ms_text(o.idle_us), ms_text(o.span_us), pct_text(idle)),
                   std::move(f)});
  }
  return out;
}

std::optional<Bottleneck> correctness_bottleneck(const CorrectnessObservation& o) {
  const bool compile_failed = o.compiling_state == "FAILED";
  if (!compile_failed && o.correctness_state != "FAILED") return std::nullopt;
  const std::string stage = compile_failed ? "compiling" : "correctness";
  std::string evidence = fmt::format("{}_state FAILED", stage);
  if (!o.errors.empty()) evidence += ": " + o.errors.front();
  return Bottleneck{BottleneckKind::kCorrectnessFailure,
                    compile_failed ? "compile" : "correctness",
                    1.0,
                    std::move(evidence),
                    {{compile_failed ? "compile_failed" : "correctness_failed", 1}}};
}

std::vector<Suggestion> suggestions_for(const Bottleneck& b, int priority) {
  std::vector<Suggestion> out;
  auto add = [&](std::string title, std::string detail) {
    out.push_back({std::move(title), std::move(detail), b.subject, priority});
  };
  auto fig = [&](const char* key) -> std::optional<double> {
    auto it = b.figures.find(key);
    return it == b.figures.end() ? std::nullopt : std::optional<double>(it->second);
  };
  const auto pct = fig("pct_of_roof");
  const bool near_roof = pct && *pct >= kNearRoofPct;
  switch (b.kind) {
    case BottleneckKind::kMemoryBound:
      if (near_roof) {
        add("Move fewer bytes: fuse with neighbouring ops",
            "It already runs near peak bandwidth, so only less traffic makes it faster: fuse it "
            "with its producer or "
            "consumer so intermediates stay in registers or shared memory instead of a round trip "
            "to HBM.");
        add("Store data in narrower types",
            "bf16/fp16 instead of fp32, fp8 or int8 (quantised weights, KV cache) halve or quarter "
            "the bytes moved.");
        add("Read each byte once",
            "Tile so that data reused by neighbouring threads or blocks is loaded once into shared "
            "memory or L2.");
      } else {
        add("Coalesce and vectorize memory accesses",
            "Adjacent threads should read adjacent addresses, with 16-byte loads (float4/int4, or "
            "block pointers in "
            "Triton); strided or misaligned access wastes most of each memory transaction.");
        add("Keep more bytes in flight",
            "Launch enough blocks to fill every SM several times, unroll so each thread issues "
            "several independent "
            "loads, and prefetch asynchronously (cp.async/TMA on NVIDIA, buffer loads on AMD).");
        add("Move fewer bytes",
            "Fuse with neighbouring ops, use narrower types, and avoid re-reading the same data "
            "from HBM.");
      }
      break;
    case BottleneckKind::kComputeBound:
      if (near_roof) {
        add("Use lower precision",
            "At this fraction of peak, the next step is a faster datatype: bf16/fp16 or fp8 inputs "
            "with fp32 "
            "accumulation roughly double the peak each step, if the accuracy allows.");
        add("Do fewer FLOPs",
            "Skip padded or masked work, exploit structure (sparsity, symmetry, causal masks) and "
            "avoid recomputation.");
      } else {
        add("Use tensor cores / matrix cores",
            "Matrix-shaped work should run on the matrix units (mma/wgmma via CUTLASS or cuBLAS, "
            "MFMA via rocWMMA, "
            "CK or hipBLASLt, tl.dot in Triton); plain FP32 FMA reaches a small fraction of their "
            "peak.");
        add("Use lower precision",
            "bf16/fp16 or fp8 inputs with fp32 accumulation raise the compute peak if the accuracy "
            "allows.");
        add("Tile for reuse and instruction-level parallelism",
            "Larger tiles with register blocking, unrolled inner loops and fewer address/integer "
            "instructions per FLOP.");
      }
      break;
    case BottleneckKind::kLaunchBound:
      if (fig("graph_share").value_or(0) < 0.5) {
        add("Capture the launches in a CUDA/HIP graph",
            "Graph replay removes most of the per-launch host cost (torch.cuda.CUDAGraph, "
            "torch.compile "
            "mode=\"reduce-overhead\", the engines' cudagraph modes, or cudaGraph/hipGraph APIs).");
      }
      add("Fuse short kernels",
          "Fewer, longer kernels: torch.compile or hand-written fused kernels for chains of "
          "elementwise, norm and "
          "small reduction ops.");
      add("Give each launch more work",
          "Batch more requests or tokens per step, or use a persistent kernel that loops over work "
          "items.");
      break;
    case BottleneckKind::kExposedCommunication:
      add("Overlap communication with computation",
          "Run collectives asynchronously on their own stream while independent compute proceeds "
          "(bucketed "
          "all-reduce during backward, overlapped tensor-parallel matmuls).");
      add("Send fewer, larger messages",
          "Larger gradient buckets (DDP bucket_cap_mb) and fused small all-reduces amortise "
          "per-collective latency.");
      add("Check the interconnect and rank skew",
          "Confirm NCCL/RCCL uses NVLink/xGMI rather than PCIe, and compare ranks: a slow rank "
          "makes the others "
          "wait inside collectives, which shows up as communication time.");
      break;
    case BottleneckKind::kIdleGpu:
      add("Find what the host does in the gaps",
          "Look at the CPU ops during the idle gaps: synchronisations (.item(), .cpu(), "
          "torch.cuda.synchronize), "
          "data loading, scheduler or Python overhead.");
      add("Remove synchronisations from the step",
          "Use pinned memory with non_blocking copies and avoid reading device values on the host "
          "inside the loop.");
      add("Keep the launch queue full",
          "CUDA graphs or torch.compile cut per-step host time; prepare the next step's inputs "
          "while the GPU runs.");
      break;
    case BottleneckKind::kLowOccupancyOrLatency:
      add("Expose more parallelism",
          "A grid of several blocks per SM at least; split-K/stream-K for skinny GEMMs; batch "
          "small problems into "
          "one launch.");
      add("Raise occupancy",
          "Fewer registers per thread (__launch_bounds__, maxrregcount) and less shared memory per "
          "block; check "
          "achieved occupancy with ncu or rocprof-compute.");
      add("Hide latency with independent work",
          "More independent loads per thread, unrolling, and double-buffered prefetch so warps are "
          "not all waiting.");
      break;
    case BottleneckKind::kCorrectnessFailure:
      if (b.subject == "compile") {
        add("Fix the build first",
            "The kernel did not compile, so nothing was measured. " + b.evidence);
      } else {
        add("Fix correctness before tuning",
            "Timing a kernel that fails its testcase says nothing about the correct one; fix it "
            "and rerun magpie "
            "analyze. " +
                b.evidence);
      }
      break;
    case BottleneckKind::kNoData:
      add("Measure bytes and FLOPs",
          "Rerun with `magpie analyze --ncu` (or performance.ncu_pass: true) so DRAM bytes and "
          "FLOPs are counted, "
          "and set performance.peak_tflops for the precision the kernel computes in, so it can be "
          "placed on the "
          "roofline.");
      break;
  }
  if (out.size() > 3) out.resize(3);
  return out;
}

std::optional<Suggestion> hot_kernel_hint(const HotKernel& k, int priority) {
  if (k.pct_total < kHotKernelPct) return std::nullopt;
  const std::string c = lower(k.category);
  const std::string share = fmt::format("{:.1f}% of GPU time", k.pct_total);
  auto hint = [&](std::string title, std::string detail) {
    return Suggestion{std::move(title), share + ". " + detail, k.name, priority};
  };
  if (c.find("gemm") != std::string::npos) {
    return hint("Tune or replace this GEMM",
                "Check that the library picked a tuned kernel for these shapes (cuBLASLt/hipBLASLt "
                "heuristics, "
                "PyTorch TunableOp), consider fp8 weights, and fuse the epilogue (bias, "
                "activation, quantisation).");
  }
  if (c.find("attention") != std::string::npos) {
    return hint("Use a fused attention kernel for this shape",
                "FlashAttention/FlashInfer (NVIDIA) or CK/aiter (AMD) kernels for the prefill and "
                "decode shapes; an "
                "fp8 KV cache halves decode traffic.");
  }
  if (c.find("norm") != std::string::npos || c.find("softmax") != std::string::npos ||
      c.find("reduc") != std::string::npos) {
    return hint("Fuse the normalization or reduction with its neighbours",
                "Fused residual-add + RMSNorm/LayerNorm (+ quantisation) reads the activations "
                "once instead of "
                "several times.");
  }
  if (c.find("elementwise") != std::string::npos || c.find("copy") != std::string::npos ||
      c.find("memcpy") != std::string::npos || c.find("index") != std::string::npos ||
      c.find("blit") != std::string::npos) {
    return hint("Fuse elementwise work and avoid copies",
                "torch.compile or epilogue fusion for chains of elementwise ops; remove "
                ".contiguous()/dtype copies "
                "that only reshape data.");
  }
  if (c.find("communication") != std::string::npos) {
    return hint("Overlap or shrink this collective",
                "Run it asynchronously under independent compute, or send fewer, larger messages.");
  }
  if (c.find("kv_cache") != std::string::npos) {
    return hint("Fuse the KV-cache write",
                "Write K/V into the cache in the same kernel as RoPE or the projection epilogue.");
  }
  return std::nullopt;
}

}  // namespace magpie::advice
