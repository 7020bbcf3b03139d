// ray_config parsing and the cluster address rules (docs/RAY.md).
#include "ray/ray_config.hpp"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <cstdlib>
#include <thread>

#include "core/error.hpp"
#include "ray/jobs_client.hpp"

namespace magpie::ray {
namespace {

struct RayAddressEnv {
  explicit RayAddressEnv(const char* value) {
    if (const char* old = std::getenv("RAY_ADDRESS")) saved = old;
    if (value)
      setenv("RAY_ADDRESS", value, 1);
    else
      unsetenv("RAY_ADDRESS");
  }
  ~RayAddressEnv() {
    if (saved)
      setenv("RAY_ADDRESS", saved->c_str(), 1);
    else
      unsetenv("RAY_ADDRESS");
  }
  std::optional<std::string> saved;
};

TEST(RayConfig, ReadsTypedKeysAndNamesUnknownOnes) {
  YAML::Node n = YAML::Load(
      "cluster_address: http://head:8265\nshared_storage_path: /mnt/shared\nentrypoint_num_gpus: "
      "1\n"
      "entrypoint_num_cpus: 4\nresources: {H200: 1}\nenv_vars: {HF_HOME: /cache}\nnum_nodes: 2\n"
      "gpus_per_node: 8\nshared_storage_pth: /x\n");
  std::vector<std::string> warnings;
  RayConfig c = parse_ray_config(n, "bench.yaml", warnings);
  EXPECT_EQ(c.cluster_address, "http://head:8265");
  EXPECT_EQ(c.shared_storage_path, "/mnt/shared");
  EXPECT_EQ(c.entrypoint_num_gpus, 1.0);
  EXPECT_EQ(c.entrypoint_num_cpus, 4.0);
  EXPECT_EQ(c.entrypoint_resources.at("H200"), 1.0);
  EXPECT_EQ(c.env_vars.at("HF_HOME"), "/cache");
  EXPECT_EQ(c.num_nodes, 2);
  EXPECT_EQ(c.gpus_per_node, 8);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("shared_storage_path"), std::string::npos) << warnings[0];
}

TEST(RayConfig, BadValuesNameTheKeyAndFile) {
  std::vector<std::string> warnings;
  try {
    parse_ray_config(YAML::Load("entrypoint_num_gpus: lots"), "bench.yaml", warnings);
    FAIL() << "accepted a non-number";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("bench.yaml"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("entrypoint_num_gpus"), std::string::npos);
  }
  EXPECT_THROW(parse_ray_config(YAML::Load("run_mode: ray"), "b.yaml", warnings), Error);
}

TEST(ClusterAddress, AutoUsesRayAddressThenTheLocalDashboard) {
  {
    RayAddressEnv env(nullptr);
    ClusterAddress a = resolve_cluster_address("auto");
    EXPECT_EQ(a.url(), "http://127.0.0.1:8265");
    EXPECT_TRUE(a.loopback());
  }
  {
    RayAddressEnv env("http://10.0.0.5:9000");
    ClusterAddress a = resolve_cluster_address("auto");
    EXPECT_EQ(a.url(), "http://10.0.0.5:9000");
    EXPECT_FALSE(a.loopback());
    EXPECT_NE(a.given.find("RAY_ADDRESS"), std::string::npos);
  }
}

TEST(ClusterAddress, RayClientAddressesMapToTheDashboard) {
  EXPECT_EQ(resolve_cluster_address("ray://head:10001").url(), "http://head:8265");
  EXPECT_EQ(resolve_cluster_address("https://ray.example.com/proxy/").url(),
            "https://ray.example.com:443/proxy");
  EXPECT_EQ(resolve_cluster_address("head:8266").url(), "http://head:8266");
  EXPECT_THROW(resolve_cluster_address("ftp://head"), Error);
  EXPECT_THROW(resolve_cluster_address("http://head:notaport"), Error);
}

TEST(JobsClient, StatusNamesRoundTrip) {
  for (auto s : {JobStatus::kPending, JobStatus::kRunning, JobStatus::kStopped,
                 JobStatus::kSucceeded, JobStatus::kFailed})
    EXPECT_EQ(parse_job_status(to_string(s)), s);
  EXPECT_TRUE(terminal(JobStatus::kStopped));
  EXPECT_FALSE(terminal(JobStatus::kRunning));
}

TEST(JobsClient, LastLines) {
  EXPECT_EQ(last_lines("a\nb\nc\n", 2), "b\nc\n");
  EXPECT_EQ(last_lines("a\nb\nc", 5), "a\nb\nc");
  EXPECT_EQ(last_lines("", 3), "");
}

TEST(JobsClient, NothingListeningIsUnreachableWithinTheTimeout) {
  // Port 1 on loopback: refused at once. The error names the address and the fix.
  ClientOptions o;
  o.connect_timeout = std::chrono::milliseconds(2000);
  JobsClient c(resolve_cluster_address("http://127.0.0.1:1"), o);
  try {
    c.ray_version();
    FAIL() << "port 1 answered";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnreachable);
    EXPECT_EQ(exit_code_for(e.kind()), 7);
    EXPECT_NE(std::string(e.what()).find("http://127.0.0.1:1"), std::string::npos) << e.what();
  }
}

TEST(JobsClient, HttpsSpeaksTlsFirst) {
  // A plain-HTTP peer on loopback (not a Ray stand-in): an https address must
  // fail in the TLS handshake, which shows the client speaks TLS there.
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
  const auto port = acceptor.local_endpoint().port();
  std::thread peer([&] {
    asio::ip::tcp::socket s(io);
    acceptor.accept(s);
    const std::string reply = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    boost::system::error_code ec;
    asio::write(s, asio::buffer(reply), ec);
  });
  JobsClient c(resolve_cluster_address("https://127.0.0.1:" + std::to_string(port)));
  try {
    c.ray_version();
    ADD_FAILURE() << "a plain-HTTP peer passed as TLS";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnreachable);
    EXPECT_NE(std::string(e.what()).find("TLS handshake"), std::string::npos) << e.what();
  }
  peer.join();
}

}  // namespace
}  // namespace magpie::ray
