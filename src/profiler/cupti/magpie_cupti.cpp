// libmagpie_cupti.so: a CUPTI injection library. The CUDA driver loads it
// from CUDA_INJECTION64_PATH into any process (nvcc binaries, PyTorch, Triton)
// and calls InitializeInjection; we then record every kernel on every stream
// and append one JSON object per kernel to $MAGPIE_CUPTI_OUTPUT (default
// magpie_kernels.jsonl). Kept free of Magpie's other libraries: it lives
// inside someone else's process.
//
// $MAGPIE_CUPTI_KIND picks how CUPTI takes kernel timestamps:
//   concurrent (default)  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: kernels keep
//                         overlapping, but on Hopper and older CUPTI patches
//                         every block to stamp start/end, which slows kernels
//                         with very many short blocks.
//   serial                CUPTI_ACTIVITY_KIND_KERNEL: kernels are serialized
//                         on the GPU and timed without patching them.
#include <cupti.h>
#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

constexpr size_t kBufferSize = 8u << 20;
constexpr size_t kAlign = 8;

int g_fd = -1;
std::mutex g_write_mutex;
bool g_initialized = false;
CUpti_ActivityKind g_kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;

void write_all(const std::string& s) {
  std::lock_guard<std::mutex> lock(g_write_mutex);
  if (g_fd < 0) return;
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(g_fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

void append_json_string(std::string& out, const char* s) {
  out += '"';
  for (const char* p = s; p && *p; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

std::string demangle(const char* name) {
  if (name == nullptr) return "";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d != nullptr) ? d : name;
  std::free(d);
  return out;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferSize));
  *size = *buffer ? kBufferSize : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  std::string out;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    out += "{\"name\":";
    append_json_string(out, demangle(k->name).c_str());
    out += ",\"mangled\":";
    append_json_string(out, k->name ? k->name : "");
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  ",\"start\":%llu,\"end\":%llu,\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],\"registers\":%u,"
                  "\"static_shared\":%d,\"dynamic_shared\":%d,\"stream\":%u,\"correlation\":%u,\"device\":%u,"
                  "\"context\":%u,\"graph_id\":%u}\n",
                  static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end), k->gridX,
                  k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ, static_cast<unsigned>(k->registersPerThread),
                  k->staticSharedMemory, k->dynamicSharedMemory, k->streamId, k->correlationId, k->deviceId,
                  k->contextId, k->graphId);
    out += buf;
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  if (dropped > 0) out += "{\"marker\":\"dropped_records\",\"ts\":0,\"count\":" + std::to_string(dropped) + "}\n";
  write_all(out);
  std::free(buffer);
}

void flush_at_exit() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (g_initialized) return 1;
  g_initialized = true;
  const char* path = std::getenv("MAGPIE_CUPTI_OUTPUT");
  if (path == nullptr || *path == '\0') path = "magpie_kernels.jsonl";
  g_fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (g_fd < 0) {
    std::fprintf(stderr, "magpie_cupti: cannot open %s: %s\n", path, std::strerror(errno));
    return 0;
  }
  const char* kind_env = std::getenv("MAGPIE_CUPTI_KIND");
  const bool serial = kind_env != nullptr && std::strcmp(kind_env, "serial") == 0;
  if (kind_env != nullptr && *kind_env != '\0' && !serial && std::strcmp(kind_env, "concurrent") != 0) {
    std::fprintf(stderr, "magpie_cupti: MAGPIE_CUPTI_KIND=%s is neither 'concurrent' nor 'serial'; using concurrent\n",
                 kind_env);
  }
  const CUpti_ActivityKind kind = serial ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(kind) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "magpie_cupti: CUPTI activity API unavailable; no kernels recorded\n");
    return 0;
  }
  g_kind = kind;
  std::atexit(flush_at_exit);
  return 1;
}

// For harnesses that bracket samples: flush completed records to the file now.
extern "C" __attribute__((visibility("default"))) int magpie_cupti_flush(void) {
  return cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS ? 0 : -1;
}

// Switches the kernel activity kind ("concurrent" or "serial") in a running
// process, so a harness worker need not restart (imports, context) to change it.
// Records taken so far are flushed under the old kind first. Returns 0 on
// success, -1 for an unknown kind or a CUPTI failure (the old kind stays on).
extern "C" __attribute__((visibility("default"))) int magpie_cupti_set_kind(const char* name) {
  if (!g_initialized || name == nullptr) return -1;
  CUpti_ActivityKind want;
  if (std::strcmp(name, "serial") == 0) {
    want = CUPTI_ACTIVITY_KIND_KERNEL;
  } else if (std::strcmp(name, "concurrent") == 0) {
    want = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  } else {
    return -1;
  }
  if (want == g_kind) return 0;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (cuptiActivityDisable(g_kind) != CUPTI_SUCCESS) return -1;
  if (cuptiActivityEnable(want) != CUPTI_SUCCESS) {
    cuptiActivityEnable(g_kind);
    return -1;
  }
  g_kind = want;
  return 0;
}

// Writes {"marker": label, "ts": <CUPTI timestamp ns>}: the same clock as the
// kernel records, so a harness can bracket each timed sample.
extern "C" __attribute__((visibility("default"))) int magpie_cupti_mark(const char* label) {
  uint64_t ts = 0;
  if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS) return -1;
  std::string line = "{\"marker\":";
  append_json_string(line, label ? label : "");
  line += ",\"ts\":" + std::to_string(ts) + "}\n";
  write_all(line);
  return 0;
}
