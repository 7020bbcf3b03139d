#include "store/run_record_json.hpp"

namespace magpie::store {

nlohmann::json to_json(const RunRecord& r) {
  return {{"id", r.id},
          {"kind", to_string(r.kind)},
          {"status", to_string(r.status)},
          {"face", r.face},
          {"command_line", r.command_line},
          {"config_hash", r.config_hash},
          {"git_commit", r.git_commit},
          {"gpu", r.gpu},
          {"workspace", r.workspace},
          {"workspace_exists", r.workspace_exists},
          {"error", r.error},
          {"started_at", r.started_at},
          {"finished_at", r.finished_at},
          {"pid", r.pid},
          {"host", r.host},
          {"metrics", r.metrics},
          {"metadata", r.metadata}};
}

}  // namespace magpie::store
