#pragma once
// The global flags that say where work runs (-c, -e, -w, --docker-image), the
// hand-off of a command to a Ray cluster (src/jobs/ray_jobs.hpp), and
// `magpie batch`.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace magpie::app {

struct GlobalOptions {
  std::string config_path;   // -c/--config: a YAML whose ray_config applies to every command
  std::string environment;   // -e/--environment: local | docker | container | ray
  size_t workers = 0;        // -w/--workers: runs at once (batch); 0 = not given
  std::string docker_image;  // --docker-image
  void register_with(CLI::App& app);
};

// When the parsed subcommand is to run on Ray (-e ray, run_mode ray, a kernel
// YAML with ray_config), submits it, waits, prints, and returns the exit
// code; nullopt = run it here.
std::optional<int> run_on_ray_if_asked(const CLI::App& app, const GlobalOptions& global, int argc,
                                       char** argv, bool verbose);

class BatchCommand {
 public:
  void register_with(CLI::App& app);
  bool parsed() const { return sub_ && sub_->parsed(); }
  int run(const GlobalOptions& global, bool verbose);

 private:
  CLI::App* sub_ = nullptr;
  std::vector<std::string> files_;
  std::string output_dir_ = "./results";
  size_t parallel_ = 0;
  bool detach_ = false;
};

}  // namespace magpie::app
