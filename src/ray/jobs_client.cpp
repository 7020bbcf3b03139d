#include "ray/jobs_client.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.hpp"

namespace magpie::ray {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;

const char* to_string(JobStatus s) {
  switch (s) {
    case JobStatus::kPending:
      return "PENDING";
    case JobStatus::kRunning:
      return "RUNNING";
    case JobStatus::kStopped:
      return "STOPPED";
    case JobStatus::kSucceeded:
      return "SUCCEEDED";
    case JobStatus::kFailed:
      return "FAILED";
    case JobStatus::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

JobStatus parse_job_status(const std::string& s) {
  if (s == "PENDING") return JobStatus::kPending;
  if (s == "RUNNING") return JobStatus::kRunning;
  if (s == "STOPPED") return JobStatus::kStopped;
  if (s == "SUCCEEDED") return JobStatus::kSucceeded;
  if (s == "FAILED") return JobStatus::kFailed;
  return JobStatus::kUnknown;
}

namespace {

struct Exchange {
  http::request<http::string_body> request;
  http::response<http::string_body> response;
  std::string stage = "connect";
  beast::error_code error;
  bool done = false;
};

template <class Stream>
asio::awaitable<void> talk(Stream& stream, Exchange& ex) {
  ex.stage = "write";
  co_await http::async_write(stream, ex.request, asio::use_awaitable);
  ex.stage = "read";
  beast::flat_buffer buffer;
  co_await http::async_read(stream, buffer, ex.response, asio::use_awaitable);
  ex.done = true;
}

asio::awaitable<void> run_exchange(const ClusterAddress& a, const ClientOptions& o, Exchange& ex) {
  auto executor = co_await asio::this_coro::executor;
  tcp::resolver resolver(executor);
  ex.stage = "resolve";
  auto endpoints =
      co_await resolver.async_resolve(a.host, std::to_string(a.port), asio::use_awaitable);
  beast::tcp_stream tcp_stream(executor);
  tcp_stream.expires_after(o.connect_timeout);
  ex.stage = "connect";
  co_await tcp_stream.async_connect(endpoints, asio::use_awaitable);
  tcp_stream.expires_after(o.request_timeout);
  if (a.scheme == "https") {
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.set_default_verify_paths();
    ctx.set_verify_mode(asio::ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> tls(std::move(tcp_stream), ctx);
    SSL_set_tlsext_host_name(tls.native_handle(), a.host.c_str());
    tls.set_verify_callback(asio::ssl::host_name_verification(a.host));
    ex.stage = "TLS handshake";
    co_await tls.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
    co_await talk(tls, ex);
  } else {
    co_await talk(tcp_stream, ex);
  }
}

std::string unreachable_hint(const ClusterAddress& a) {
  if (a.given.rfind("auto", 0) == 0)
    return "start a cluster here with `ray start --head`, or set RAY_ADDRESS / "
           "ray_config.cluster_address "
           "to the dashboard (http://HEAD:8265)";
  return "check that the Ray head runs there and its dashboard listens on that port "
         "(`ray start --head --dashboard-host 0.0.0.0`), or fix ray_config.cluster_address / "
         "RAY_ADDRESS";
}

json parse_body(const JobsClient& c, const JobsClient::Response& r, const std::string& what) {
  try {
    return json::parse(r.body);
  } catch (const json::exception&) {
    throw Error(ErrorKind::kBadFormat,
                fmt::format("Ray at {} answered {} with HTTP {} and a body that is not JSON: {}",
                            c.address().url(), what, r.status, r.body.substr(0, 300)),
                "", std::nullopt,
                "is this a Ray dashboard? the Jobs API lives on the dashboard port (8265)");
  }
}

std::optional<int64_t> opt_int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<int64_t>();
}

// Ray sends null for fields that do not apply yet (job_id, message, end_time).
std::string opt_string(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

JobInfo job_from_json(const json& j) {
  JobInfo info;
  info.submission_id = opt_string(j, "submission_id");
  if (info.submission_id.empty()) info.submission_id = opt_string(j, "job_id");
  info.status = parse_job_status(opt_string(j, "status"));
  info.message = opt_string(j, "message");
  info.error_type = opt_string(j, "error_type");
  info.entrypoint = opt_string(j, "entrypoint");
  if (j.contains("metadata") && j["metadata"].is_object())
    for (const auto& [k, v] : j["metadata"].items())
      info.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
  info.start_time_ms = opt_int(j, "start_time");
  info.end_time_ms = opt_int(j, "end_time");
  if (auto code = opt_int(j, "driver_exit_code")) info.driver_exit_code = static_cast<int>(*code);
  return info;
}

}  // namespace

JobsClient::JobsClient(ClusterAddress address, ClientOptions options)
    : address_(std::move(address)), options_(std::move(options)) {}

JobsClient::Response JobsClient::request(const std::string& method, const std::string& path,
                                         const std::string& body) const {
  Exchange ex;
  ex.request =
      http::request<http::string_body>(http::string_to_verb(method), address_.base_path + path, 11);
  ex.request.set(http::field::host, address_.host);
  ex.request.set(http::field::user_agent, "magpie");
  ex.request.set(http::field::accept, "application/json");
  for (const auto& [k, v] : options_.headers) ex.request.set(k, v);
  if (!body.empty()) ex.request.set(http::field::content_type, "application/json");
  ex.request.body() = body;
  ex.request.keep_alive(false);
  ex.request.prepare_payload();
  asio::io_context io;
  std::string failure;
  asio::co_spawn(io, run_exchange(address_, options_, ex), [&](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const boost::system::system_error& se) {
      failure = fmt::format("{}: {}", ex.stage, se.code().message());
    } catch (const std::exception& other) {
      failure = fmt::format("{}: {}", ex.stage, other.what());
    }
  });
  io.run();
  if (!ex.done)
    throw Error(ErrorKind::kUnreachable,
                fmt::format("Ray cluster at {} ({}) is unreachable: {}", address_.url(),
                            address_.given, failure.empty() ? "no answer" : failure),
                "", std::nullopt, unreachable_hint(address_));
  return {static_cast<int>(ex.response.result_int()), std::move(ex.response.body())};
}

std::string JobsClient::ray_version() const {
  Response r = request("GET", "/api/version");
  if (r.status != 200)
    throw Error(ErrorKind::kUnreachable,
                fmt::format("{} answered /api/version with HTTP {}: {}", address_.url(), r.status,
                            r.body.substr(0, 200)),
                "", std::nullopt,
                r.status == 401 || r.status == 403
                    ? "the dashboard wants credentials: set ray_config.headers (e.g. Authorization)"
                    : "is this a Ray dashboard (default port 8265)?");
  return opt_string(parse_body(*this, r, "/api/version"), "ray_version");
}

std::string JobsClient::submit(const JobSubmission& job) const {
  json body = {{"entrypoint", job.entrypoint}};
  if (!job.submission_id.empty()) body["submission_id"] = job.submission_id;
  json runtime_env = json::object();
  if (!job.env_vars.empty()) runtime_env["env_vars"] = job.env_vars;
  if (!job.working_dir.empty()) runtime_env["working_dir"] = job.working_dir;
  if (!runtime_env.empty()) body["runtime_env"] = runtime_env;
  if (!job.metadata.empty()) body["metadata"] = job.metadata;
  if (job.entrypoint_num_cpus) body["entrypoint_num_cpus"] = *job.entrypoint_num_cpus;
  if (job.entrypoint_num_gpus) body["entrypoint_num_gpus"] = *job.entrypoint_num_gpus;
  if (job.entrypoint_memory_bytes)
    body["entrypoint_memory"] = static_cast<int64_t>(*job.entrypoint_memory_bytes);
  if (!job.entrypoint_resources.empty()) body["entrypoint_resources"] = job.entrypoint_resources;
  Response r = request("POST", "/api/jobs/", body.dump());
  if (r.status != 200)
    throw Error(ErrorKind::kRejected,
                fmt::format("Ray at {} refused the job (HTTP {}): {}", address_.url(), r.status,
                            r.body.substr(0, 2000)),
                "", std::nullopt,
                "check ray_config (resources, env_vars, working_dir) against the cluster");
  std::string id = opt_string(parse_body(*this, r, "the submission"), "submission_id");
  return id.empty() ? job.submission_id : id;
}

JobInfo JobsClient::info(const std::string& id) const {
  Response r = request("GET", "/api/jobs/" + id);
  if (r.status == 404 || (r.status != 200 && r.body.find("does not exist") != std::string::npos))
    throw Error(ErrorKind::kNotFound, fmt::format("Ray at {} has no job '{}'", address_.url(), id),
                "", std::nullopt, "list the cluster's jobs with ray_task_list or `ray job list`");
  if (r.status != 200)
    throw Error(ErrorKind::kRejected,
                fmt::format("Ray at {}: job '{}': HTTP {}: {}", address_.url(), id, r.status,
                            r.body.substr(0, 500)));
  return job_from_json(parse_body(*this, r, "the job status"));
}

std::string JobsClient::logs(const std::string& id) const {
  Response r = request("GET", "/api/jobs/" + id + "/logs");
  if (r.status != 200)
    throw Error(ErrorKind::kNotFound, fmt::format("Ray at {}: no logs for job '{}' (HTTP {})",
                                                  address_.url(), id, r.status));
  return opt_string(parse_body(*this, r, "the logs"), "logs");
}

bool JobsClient::stop(const std::string& id) const {
  Response r = request("POST", "/api/jobs/" + id + "/stop");
  if (r.status == 404)
    throw Error(ErrorKind::kNotFound, fmt::format("Ray at {} has no job '{}'", address_.url(), id));
  if (r.status != 200)
    throw Error(ErrorKind::kRejected,
                fmt::format("Ray at {}: stop '{}': HTTP {}: {}", address_.url(), id, r.status,
                            r.body.substr(0, 500)));
  json j = parse_body(*this, r, "the stop");
  return j.contains("stopped") && j["stopped"].is_boolean() && j["stopped"].get<bool>();
}

std::vector<JobInfo> JobsClient::list() const {
  Response r = request("GET", "/api/jobs/");
  if (r.status != 200)
    throw Error(ErrorKind::kRejected,
                fmt::format("Ray at {}: list jobs: HTTP {}", address_.url(), r.status));
  std::vector<JobInfo> out;
  json all = parse_body(*this, r, "the job list");
  if (all.is_array())
    for (const auto& j : all) out.push_back(job_from_json(j));
  return out;
}

std::string JobsClient::resource_summary() const {
  try {
    Response r = request("GET", "/api/cluster_status");
    if (r.status != 200) return {};
    json j = json::parse(r.body, nullptr, false);
    // usage: {resource: [used, total]}; what a waiting job could get is total - used.
    const json usage =
        j.value("/data/clusterStatus/loadMetricsReport/usage"_json_pointer, json::object());
    std::string available;
    // Ray counts memory in bytes and everything else in units.
    auto quantity = [](const std::string& name, double v) {
      return name == "memory" || name == "objectStoreMemory"
                 ? fmt::format("{:.1f} GiB", v / (1024.0 * 1024 * 1024))
                 : fmt::format("{:g}", v);
    };
    auto amount = [&](const std::string& name, double v) {
      return fmt::format("{} {}", quantity(name, v), name);
    };
    if (usage.is_object()) {
      for (const char* name : {"CPU", "GPU", "memory"}) {
        auto it = usage.find(name);
        double used = 0, total = 0;
        if (it != usage.end() && it->is_array() && it->size() == 2) {
          used = (*it)[0].get<double>();
          total = (*it)[1].get<double>();
        }
        available += fmt::format("{}{} (of {})", available.empty() ? "" : ", ",
                                 amount(name, total - used), quantity(name, total));
      }
      for (const auto& [name, pair] : usage.items())  // custom resources, e.g. H200
        if (name != "CPU" && name != "GPU" && name != "memory" && name != "objectStoreMemory" &&
            name.rfind("node:", 0) != 0 && name.rfind("accelerator_type:", 0) != 0 &&
            pair.is_array() && pair.size() == 2)
          available += fmt::format(", {}", amount(name, pair[1].get<double>() - pair[0].get<double>()));
    }
    if (!available.empty()) available = "available now: " + available;
    std::string text = j.value("/data/autoscalingStatus"_json_pointer, std::string{});
    for (size_t pos = 0; pos < text.size();) {
      size_t end = text.find('\n', pos);
      std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      if (auto k = line.find("ResourceUsage:"); k != std::string::npos)
        return available.empty() ? line.substr(k) : available + "; " + line.substr(k);
      if (end == std::string::npos) break;
      pos = end + 1;
    }
    return available;
  } catch (const std::exception&) {
  }
  return {};
}

JobInfo wait_for_job(const JobsClient& client, const std::string& id, const WaitOptions& o) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto pending_since = start;
  auto poll = o.first_poll;
  JobStatus last = JobStatus::kUnknown;
  bool first = true;
  std::optional<clock::time_point> unreachable_since;
  while (true) {
    JobInfo info;
    try {
      info = client.info(id);
      unreachable_since.reset();
    } catch (const Error& e) {
      // A dashboard restart or a network hiccup must not lose a running job:
      // keep asking for a while before giving up.
      if (e.kind() != ErrorKind::kUnreachable) throw;
      if (!unreachable_since) unreachable_since = clock::now();
      if (std::chrono::duration<double>(clock::now() - *unreachable_since).count() >
          o.unreachable_grace_s)
        throw;
      std::this_thread::sleep_for(o.max_poll);
      continue;
    }
    if (first || info.status != last) {
      if (o.on_change) o.on_change(info);
      if (info.status == JobStatus::kPending) pending_since = clock::now();
      if (info.status != last) poll = o.first_poll;  // a change: look again soon
      last = info.status;
      first = false;
    }
    if (o.on_poll) o.on_poll(info);
    if (terminal(info.status)) return info;
    if (o.cancel && o.cancel->load()) return info;
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (info.status == JobStatus::kPending && o.pending_timeout_s > 0 &&
        std::chrono::duration<double>(clock::now() - pending_since).count() > o.pending_timeout_s) {
      std::string resources = client.resource_summary();
      try {
        client.stop(id);
      } catch (const Error&) {
      }
      throw Error(
          ErrorKind::kRejected,
          fmt::format(
              "Ray job {} waited {:.0f} s in PENDING at {}; Magpie asked Ray to stop it: {}{}", id,
              o.pending_timeout_s, client.address().url(), info.message,
              resources.empty() ? "" : "\ncluster: " + resources),
          "", std::nullopt,
          "ask for fewer resources (ray_config.entrypoint_num_gpus / entrypoint_num_cpus), add "
          "nodes, or raise "
          "ray_config.pending_timeout_s");
    }
    if (o.timeout_s > 0 && elapsed > o.timeout_s) {
      try {
        client.stop(id);
      } catch (const Error&) {
      }
      throw Error(ErrorKind::kRejected,
                  fmt::format("Ray job {} ran past {:.0f} s at {} and was stopped", id, o.timeout_s,
                              client.address().url()),
                  "", std::nullopt, "raise ray_config.job_timeout_s");
    }
    // Sleep in small steps so a cancel is seen quickly.
    const auto until = clock::now() + poll;
    while (clock::now() < until && !(o.cancel && o.cancel->load()))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    poll = std::min(o.max_poll, poll * 2);
  }
}

std::string LogFollower::take(const std::string& log) {
  // A shorter log than before is a different log (a resubmitted id): start over.
  if (log.size() < seen_ || log.compare(0, seen_, log_, 0, seen_) != 0) seen_ = 0;
  log_ = log;
  size_t end = log_.rfind('\n');
  if (end == std::string::npos || end + 1 <= seen_) return {};
  std::string out = log_.substr(seen_, end + 1 - seen_);
  seen_ = end + 1;
  return out;
}

std::string LogFollower::poll() {
  try {
    return take(client_.logs(id_));
  } catch (const Error&) {
    return {};  // not there yet, or a hiccup: the next poll catches up
  }
}

std::string LogFollower::finish() {
  std::string out = poll();
  if (seen_ < log_.size()) {
    out += log_.substr(seen_);
    seen_ = log_.size();
  }
  return out;
}

std::string last_lines(const std::string& text, size_t n) {
  if (n == 0) return {};
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  size_t count = 0;
  while (pos > 0) {
    size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    if (++count == n) return text.substr(nl + 1);
    pos = nl;
  }
  return text;
}

}  // namespace magpie::ray
