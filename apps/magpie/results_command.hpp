#pragma once
// `magpie results`: the results store (list, show, import) and diffs between
// workspaces; the logic is in src/store.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace magpie::app {

class ResultsCommand {
 public:
  void register_with(CLI::App& app);
  bool parsed() const { return sub_ && sub_->parsed(); }
  int run(bool verbose);

 private:
  int run_list();
  int run_show();
  int run_diff();
  int run_import();
  int run_copy(const std::filesystem::path& from, const std::filesystem::path& to);
  int run_series();
  int run_history();
  int run_check();
  int run_site();

  CLI::App* sub_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* diff_ = nullptr;
  CLI::App* import_ = nullptr;
  CLI::App* export_ = nullptr;
  CLI::App* series_ = nullptr;
  CLI::App* history_ = nullptr;
  CLI::App* check_ = nullptr;
  CLI::App* site_ = nullptr;
  std::string db_;
  // list
  std::string kind_, status_;
  size_t limit_ = 20;
  bool json_ = false;
  // show
  std::string target_;
  // diff
  std::vector<std::string> targets_;
  std::vector<std::string> labels_;
  std::string format_ = "table";
  std::string output_;
  bool ops_ = false;
  double threshold_ = -1;
  int resamples_ = 0;
  bool fail_on_regression_ = false;
  std::string html_;
  double run_noise_ = -1;
  bool no_repeats_ = false;
  bool aa_ = false;
  // import
  std::string import_dir_;
  std::string import_from_;  // another store to copy runs from
  std::string export_to_;    // another store to copy runs into
  // series, history, check
  std::string series_id_;
  std::vector<std::string> metrics_;
  std::vector<std::string> series_ids_;
  std::string since_;
  double min_change_ = 0.02;
  std::string junit_, github_summary_, bmf_, csv_;
  // site
  std::string site_dir_;
};

}  // namespace magpie::app
