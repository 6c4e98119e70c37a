// The control protocol's request table (daemon/server/request_table.h) against
// daemon/control_protocol.md: every request type the protocol names has exactly one row, what a
// caller without the cluster key may send, who may send the daemons' and workers' requests, and
// the field check each request type's row asks for.
#include "daemon/server/request_table.h"

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace dtrain::server {
namespace request_table_test {

using json = nlohmann::json;

std::string ProtocolText() {
  const char* data = std::getenv("DTRAIN_TEST_DATA");  // tests/data of the source tree
  BOOST_REQUIRE(data != nullptr);
  std::ifstream in(std::string(data) + "/../../daemon/control_protocol.md");
  BOOST_REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first cells of the protocol's "Client requests" table: "| `version` | ...".
std::set<std::string> ClientRequestTypes(const std::string& protocol) {
  std::set<std::string> types;
  const std::regex row(R"(\n\| `([a-z_]+)` \|)");
  for (std::sregex_iterator it(protocol.begin(), protocol.end(), row), end; it != end; ++it) {
    types.insert((*it)[1]);
  }
  return types;
}

// Every message type the protocol spells out: {"type": "node_heartbeat", ...}.
std::set<std::string> MessageTypes(const std::string& protocol) {
  std::set<std::string> types;
  const std::regex message(R"re(\{"type": "([a-z_]+)")re");
  for (std::sregex_iterator it(protocol.begin(), protocol.end(), message), end; it != end; ++it) {
    types.insert((*it)[1]);
  }
  return types;
}

int RowsOf(const std::string& type) {
  int rows = 0;
  for (const RequestRow& row : RequestTable()) rows += row.type == type ? 1 : 0;
  return rows;
}

BOOST_AUTO_TEST_SUITE(request_table)

BOOST_AUTO_TEST_CASE(every_client_request_of_the_protocol_has_exactly_one_client_row) {
  const std::set<std::string> client = ClientRequestTypes(ProtocolText());
  BOOST_TEST(client.size() == 21u);  // the tables were read: version ... settings, sweep_*
  for (const std::string& type : client) {
    BOOST_TEST_CONTEXT(type) {
      BOOST_TEST(RowsOf(type) == 1);
      const RequestRow* row = FindRequest(type);
      BOOST_REQUIRE(row != nullptr);
      BOOST_TEST(row->type == type);
      BOOST_TEST((row->sender == Sender::kClient));
    }
  }
}

BOOST_AUTO_TEST_CASE(the_daemons_and_workers_requests_have_one_row_each_and_no_row_is_unnamed) {
  const std::string protocol = ProtocolText();
  const std::set<std::string> client = ClientRequestTypes(protocol);
  const std::set<std::string> messages = MessageTypes(protocol);
  for (const char* type : {"node_heartbeat", "spawn_worker", "worker_channel", "worker_hello"}) {
    BOOST_TEST_CONTEXT(type) {
      BOOST_TEST(messages.count(type) == 1u);
      BOOST_TEST(RowsOf(type) == 1);
    }
  }
  // Each row is a request the protocol names; the messages inside a stream (a worker's
  // worker_done, a hosted worker's line and exit, a stand-in's stop) are not requests.
  for (const RequestRow& row : RequestTable()) {
    const std::string type(row.type);
    BOOST_TEST_CONTEXT(type) {
      BOOST_TEST((client.count(type) + messages.count(type) == 1u));
    }
  }
  for (const char* in_stream : {"worker_done", "line", "exit", "stop"}) {
    BOOST_TEST(messages.count(in_stream) == 1u);
    BOOST_TEST(FindRequest(in_stream) == nullptr);
  }
}

BOOST_AUTO_TEST_CASE(rows_follow_request_kind_order) {
  int index = 0;
  for (const RequestRow& row : RequestTable()) {
    BOOST_TEST(static_cast<int>(row.kind) == index);
    ++index;
  }
}

BOOST_AUTO_TEST_CASE(a_caller_without_the_key_may_send_queries_and_no_change) {
  std::set<std::string> queries;
  for (const RequestRow& row : RequestTable()) {
    if (row.query) queries.insert(std::string(row.type));
  }
  // The protocol's queries, and logs, checkpoint and settings (owner-only: refused to a caller
  // no one knows, as the protocol says), and the sweep queries (a sweep is shown to its owner
  // only).
  BOOST_TEST(
      (queries == std::set<std::string>{"version", "status", "list", "wait", "logs", "metrics",
                                        "checkpoints", "checkpoint", "settings", "nodes",
                                        "sweep_status", "sweep_best", "sweep_list"}));
  // Every request that changes a job or starts a process, and why (it quotes a job's log lines
  // to its owner, and is not among the protocol's queries).
  for (const char* not_query :
       {"submit", "cancel", "resume", "rm", "prune", "why", "node_heartbeat", "spawn_worker",
        "worker_channel", "worker_hello", "sweep_submit", "sweep_cancel"}) {
    BOOST_TEST_CONTEXT(not_query) {
      BOOST_REQUIRE(FindRequest(not_query) != nullptr);
      BOOST_TEST(!FindRequest(not_query)->query);
    }
  }
  // A query that acts for a user is one that only the job's owner may send, or a sweep's
  // (whose handler answers anyone else as if there were no such sweep).
  for (const RequestRow& row : RequestTable()) {
    BOOST_TEST_CONTEXT(row.type) {
      if (row.query && row.acts_for_user) {
        BOOST_TEST((!row.owner_only.empty() || row.type.starts_with("sweep_")));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_requests_that_act_for_a_user_are_those_the_protocol_lists) {
  std::set<std::string> acting;
  for (const RequestRow& row : RequestTable()) {
    if (row.acts_for_user) acting.insert(std::string(row.type));
  }
  BOOST_TEST(
      (acting == std::set<std::string>{"submit", "cancel", "resume", "rm", "prune", "logs", "why",
                                       "checkpoint", "settings", "sweep_submit", "sweep_status",
                                       "sweep_cancel", "sweep_best", "sweep_list"}));
}

BOOST_AUTO_TEST_CASE(owner_only_requests_name_a_job_and_act_for_its_user) {
  std::set<std::string> owner_only;
  for (const RequestRow& row : RequestTable()) {
    if (row.owner_only.empty()) continue;
    owner_only.insert(std::string(row.type));
    BOOST_TEST_CONTEXT(row.type) {
      BOOST_TEST(row.acts_for_user);
      BOOST_TEST(row.needs_id);
      BOOST_TEST((row.sender == Sender::kClient));
    }
  }
  BOOST_TEST((owner_only == std::set<std::string>{"logs", "why", "checkpoint", "settings"}));
  BOOST_TEST(FindRequest("checkpoint")->owner_only == "export");
  BOOST_TEST(FindRequest("logs")->owner_only == "read the logs of");
}

BOOST_AUTO_TEST_CASE(only_a_clients_request_is_a_query_acts_for_a_user_or_names_a_job) {
  for (const RequestRow& row : RequestTable()) {
    if (row.sender == Sender::kClient) continue;
    BOOST_TEST_CONTEXT(row.type) {
      BOOST_TEST(!row.query);
      BOOST_TEST(!row.acts_for_user);
      BOOST_TEST(!row.needs_id);
      BOOST_TEST(row.owner_only.empty());
    }
  }
  BOOST_TEST((FindRequest("spawn_worker")->sender == Sender::kKeyHolder));
  BOOST_TEST((FindRequest("worker_channel")->sender == Sender::kTcpCaller));
  BOOST_TEST((FindRequest("worker_hello")->sender == Sender::kWorker));
}

BOOST_AUTO_TEST_CASE(an_unknown_type_has_no_row) {
  BOOST_TEST(FindRequest("") == nullptr);
  BOOST_TEST(FindRequest("shutdown") == nullptr);
  BOOST_TEST(FindRequest("Status") == nullptr);   // types are exact
  BOOST_TEST(FindRequest("status ") == nullptr);
  BOOST_TEST(FindRequest(std::string_view("status\0x", 8)) == nullptr);
}

BOOST_AUTO_TEST_CASE(a_request_naming_a_job_needs_an_integer_id) {
  // And those naming a sweep.
  const std::set<std::string> naming_a_job = {
      "status",   "cancel",       "resume",       "rm",        "wait",
      "logs",     "metrics",      "checkpoints",  "why",       "checkpoint",
      "settings", "sweep_status", "sweep_cancel", "sweep_best"};
  for (const RequestRow& row : RequestTable()) {
    const std::string type(row.type);
    BOOST_TEST_CONTEXT(type) {
      BOOST_TEST(row.needs_id == (naming_a_job.count(type) == 1));
      const json with_id = {{"v", 1}, {"type", type}, {"id", 7}};
      BOOST_TEST(!MissingField(row, with_id).has_value());
      for (const json& without : {json{{"v", 1}, {"type", type}},
                                  json{{"v", 1}, {"type", type}, {"id", "7"}},
                                  json{{"v", 1}, {"type", type}, {"id", 7.5}},
                                  json{{"v", 1}, {"type", type}, {"id", nullptr}}}) {
        const std::optional<std::string> missing = MissingField(row, without);
        if (row.needs_id) {
          BOOST_REQUIRE(missing.has_value());
          BOOST_TEST(*missing == type + " needs \"id\" (an integer)");
        } else {
          BOOST_TEST(!missing.has_value());
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace request_table_test
}  // namespace dtrain::server
