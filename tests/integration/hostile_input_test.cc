// A hostile local user against a root dtraind, through what it sends as input: a job file nested
// 40,000 deep (it overflowed toml++'s stack: `dtrain validate` died of SIGSEGV and a submit killed
// the daemon with every running job), data paths naming a FIFO or a device (validate and submit
// hung for ever; in the daemon the job held its slot at 0 % CPU for ever), and control characters
// in what ends up in a job's reason (they cleared other users' screens and forged rows of
// `dtrain list`), and root's export of a job whose data path was re-pointed at a root-only file
// (its values became the model's feature means). The daemon survives each, and another user's job, running meanwhile, succeeds
// with the metrics it has without the attack. Root only (real users): skipped otherwise.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "integration/shared_daemon.h"
#include "integration/test_user.h"

namespace dtrain::testing {
namespace hostile_input_test {

using json = nlohmann::json;

constexpr const char* kVictim = "dtrain-hn-in-v";
constexpr const char* kAttacker = "dtrain-hn-in-a";

// The victim's job: seconds of training, one thread, its result the same bits every run.
constexpr const char* kVictimJob = R"(name = "victim"
[data]
format = "synthetic"
rows = 4000
features = 8
[model]
type = "mlp"
hidden = [16]
[train]
epochs = 3
threads = 1
)";

std::string Repeat(const std::string& piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

// Two real users and a shared root daemon; files in a folder both may read.
struct Neighbours {
  Neighbours() : victim(kVictim), attacker(kAttacker), s("max_jobs = 2\n") {
    ::chmod(files.path().c_str(), 0755);
  }
  ProcessResult AsVictim(std::vector<std::string> args) const {
    return s.Cli(kVictim, kVictim, std::move(args));
  }
  ProcessResult AsAttacker(std::vector<std::string> args) const {
    return s.Cli(kAttacker, kAttacker, std::move(args));
  }
  // The victim's job submitted without waiting; its id.
  std::int64_t SubmitVictim() const {
    const ProcessResult r = AsVictim({"submit", victim_job, "--no-wait", "--json"});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out)["id"].get<std::int64_t>();
  }
  // The submit request as a client that skips dtrain's own checks sends it; the reply.
  json RawSubmit(const std::string& job_toml) const {
    return s.d.Request({{"type", "submit"}, {"job_toml", job_toml}, {"source", "hostile.toml"}});
  }

  TestUser victim, attacker;
  SharedDaemon s;
  TempDir files;
  std::string victim_job = files.Write("victim.toml", kVictimJob);
};

// The numbers a job's training ended with, which an attack must not change (not its speed).
json FinalMetrics(const json& job) {
  BOOST_TEST(job["state"] == "succeeded", job.dump());
  json kept;
  for (const char* name : {"train_loss", "train_accuracy", "eval_loss", "eval_accuracy"}) {
    BOOST_TEST(job["metrics"].contains(name), job.dump());
    kept[name] = job["metrics"][name];
  }
  return kept;
}

BOOST_AUTO_TEST_SUITE(hostile_input)

BOOST_AUTO_TEST_CASE(a_job_file_40000_deep_is_refused_and_the_daemon_keeps_serving) {
  if (!Root()) return;
  Neighbours n;
  const json reference = FinalMetrics(n.s.d.Wait(n.SubmitVictim()));
  const std::int64_t victim_job = n.SubmitVictim();
  const pid_t daemon = n.s.d.pid();

  const std::string blobs = ReadFile(EnvPath("DTRAIN_TEST_DATA") + "/../../examples/blobs.toml");
  const std::string deep_key = blobs + Repeat("x.", 40000) + "y = 1\n";
  const std::string deep_header = blobs + "[" + Repeat("t.", 40000) + "t]\n";
  for (const std::string& text : {deep_key, deep_header}) {
    const std::string path = n.files.Write("deep.toml", text);
    for (const char* command : {"validate", "submit"}) {
      const ProcessResult r = n.AsAttacker({command, path});
      BOOST_TEST(r.exit_code == 2, command << ": exit " << r.exit_code << ": " << r.err);
      BOOST_TEST(r.err.find("deep.toml:") != std::string::npos, r.err);
      BOOST_TEST(r.err.find("more than 32 parts") != std::string::npos, r.err);
    }
    // Past the client, straight to the daemon.
    const json reply = n.RawSubmit(text);
    BOOST_TEST(reply["ok"] == false, reply.dump().substr(0, 400));
    BOOST_TEST(reply["code"] == "invalid_job");
    BOOST_TEST(reply.dump().find("more than 32 parts") != std::string::npos);
  }
  BOOST_TEST(n.s.d.pid() == daemon);
  BOOST_TEST(n.s.d.Request({{"type", "version"}})["ok"] == true);
  BOOST_TEST(FinalMetrics(n.s.d.Wait(victim_job)) == reference);
}

BOOST_AUTO_TEST_CASE(a_fifo_or_a_device_as_data_fails_at_once_and_frees_its_slot) {
  if (!Root()) return;
  Neighbours n;
  const std::string fifo = n.files.Path("train.csv");
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0666) == 0);
  const std::string link = n.files.Path("zero.csv");
  BOOST_REQUIRE(::symlink("/dev/zero", link.c_str()) == 0);
  const auto job = [](const std::string& train) {
    return "[data]\nformat = \"csv\"\ntrain = \"" + train + "\"\n[restart]\nmax_restarts = 0\n";
  };
  // The client checks the files as the submitter, and refuses at once.
  for (const std::string& train : {fifo, std::string("/dev/zero"), std::string("/dev/urandom"), link}) {
    const std::string path = n.files.Write("special.toml", job(train));
    for (const char* command : {"validate", "submit"}) {
      const ProcessResult r = n.AsAttacker({command, path});
      BOOST_TEST(r.exit_code == 2, command << " " << train << ": " << r.err);
      BOOST_TEST(r.err.find("not a regular file") != std::string::npos, r.err);
    }
  }
  // A job that reaches the daemon anyway (the file re-pointed after the check) fails at once,
  // both slots free again for the victim's jobs.
  std::vector<std::int64_t> hostile;
  for (const std::string& train : {fifo, link}) {
    const json reply = n.RawSubmit(job(train));
    BOOST_REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    hostile.push_back(reply["job"]["id"].get<std::int64_t>());
  }
  for (const std::int64_t id : hostile) {
    const json ended = n.s.d.Wait(id);
    BOOST_TEST(ended["state"] == "failed", ended.dump());
    BOOST_TEST(ended["reason"].get<std::string>().find("not a regular file") != std::string::npos,
               ended.dump());
  }
  const std::int64_t first = n.SubmitVictim(), second = n.SubmitVictim();
  BOOST_TEST(FinalMetrics(n.s.d.Wait(first)) == FinalMetrics(n.s.d.Wait(second)));
}

BOOST_AUTO_TEST_CASE(control_characters_in_another_users_job_reach_no_terminal) {
  if (!Root()) return;
  Neighbours n;
  // A reason that clears the screen, sets the window title and forges a row of `dtrain list`.
  const std::string path = n.files.Path("") + "/x\\u001b[2J\\u001b]0;owned\\u0007\\r\\n  99  "
                           "succeeded  FORGED\\u009b31m.csv";
  const json reply = n.RawSubmit("[data]\nformat = \"csv\"\ntrain = \"" + path +
                                 "\"\n[restart]\nmax_restarts = 0\n");
  BOOST_REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
  const std::int64_t id = reply["job"]["id"].get<std::int64_t>();
  const json ended = n.s.d.Wait(id);
  BOOST_REQUIRE(ended["reason"].get<std::string>().find("\x1b[2J") != std::string::npos);

  for (std::vector<std::string> args :
       {std::vector<std::string>{"list"}, std::vector<std::string>{"status", std::to_string(id)},
        std::vector<std::string>{"list", "--state", "failed"}}) {
    const ProcessResult r = n.AsVictim(args);
    BOOST_TEST(r.exit_code == 0, args[0] << ": " << r.err);
    const std::string shown = r.out + r.err;
    BOOST_TEST(shown.find('\x1b') == std::string::npos, args[0] << ": " << shown);
    BOOST_TEST(shown.find('\a') == std::string::npos, args[0]);
    BOOST_TEST(shown.find('\r') == std::string::npos, args[0]);
    BOOST_TEST(shown.find("\xc2\x9b") == std::string::npos, args[0]);  // C1's one-byte CSI
    BOOST_TEST(shown.find("\\x1b[2J") != std::string::npos, args[0] << ": " << shown);
    // The forged row is part of the job's own line, not a line of its own.
    BOOST_TEST(shown.find("\n  99  succeeded") == std::string::npos, args[0] << ": " << shown);
  }
  // Root, who may read every job's lines: `dtrain why` quotes the reason and the last lines.
  const ProcessResult why = RunProcess(
      {n.s.bins.dtrain, "--socket", n.s.d.socket(), "why", std::to_string(id)}, n.files.Path(""));
  BOOST_TEST(why.out.find('\x1b') == std::string::npos, why.out);
  BOOST_TEST(why.out.find("\\x1b[2J") != std::string::npos, why.out + why.err);
  // --json stays JSON, its strings escaped by the encoder.
  const ProcessResult j = n.AsVictim({"status", std::to_string(id), "--json"});
  BOOST_TEST(j.out.find('\x1b') == std::string::npos);
  BOOST_TEST(json::parse(j.out)["reason"] == ended["reason"]);
}

BOOST_AUTO_TEST_CASE(root_exports_a_job_reading_its_data_with_the_owners_rights_only) {
  if (!Root()) return;
  Neighbours n;
  // The attacker's own rows, through a link, and a CSV only root may read.
  std::string rows = "a,b,label\n";
  for (int i = 0; i < 40; ++i) rows += std::to_string(i % 7) + "," + std::to_string(i % 5) + "," + std::to_string(i % 2) + "\n";
  const std::string own = n.files.Write("own.csv", rows);
  const std::string secret = n.files.Write("secret.csv", "a,b,label\n31337,4242,1\n31337,4242,0\n");
  ::chmod(secret.c_str(), 0600);
  const std::string link = n.files.Path("data.csv");
  BOOST_REQUIRE(::symlink(own.c_str(), link.c_str()) == 0);
  const std::string job = n.files.Write(
      "scaled.toml", "[data]\nformat = \"csv\"\ntrain = \"" + link +
                         "\"\nlabel_column = \"label\"\nscale = \"standardize\"\n"
                         "[model]\ntype = \"logistic\"\n[train]\nepochs = 2\n");
  const ProcessResult trained = n.AsAttacker({"submit", job, "--json"});
  BOOST_REQUIRE_MESSAGE(trained.exit_code == 0, trained.err);
  const std::string id = std::to_string(json::parse(trained.out)["id"].get<std::int64_t>());

  // Root exports it while the link points at the secret: the data is read as the owner, who may
  // not read it, so nothing of it reaches the model.
  BOOST_REQUIRE(::unlink(link.c_str()) == 0 && ::symlink(secret.c_str(), link.c_str()) == 0);
  const std::string model = n.files.Path("model.dtm");
  const auto export_as_root = [&] {
    return RunProcess({n.s.bins.dtrain, "--socket", n.s.d.socket(), "export", id, "-o", model},
                      n.files.Path(""));
  };
  const ProcessResult leaked = export_as_root();
  BOOST_TEST(leaked.exit_code == 1, leaked.out + leaked.err);
  BOOST_TEST(leaked.err.find("Permission denied") != std::string::npos, leaked.err);
  BOOST_TEST(leaked.err.find("31337") == std::string::npos);
  BOOST_TEST(::access(model.c_str(), F_OK) != 0);
  // A FIFO there fails at once instead of hanging the export.
  const std::string fifo = n.files.Path("rows.fifo");
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0666) == 0);
  BOOST_REQUIRE(::unlink(link.c_str()) == 0 && ::symlink(fifo.c_str(), link.c_str()) == 0);
  const ProcessResult hung = export_as_root();
  BOOST_TEST(hung.exit_code == 1);
  BOOST_TEST(hung.err.find("not a regular file") != std::string::npos, hung.err);
  // Pointed back at the owner's rows, the export works, for root and for the owner, and the
  // model file takes the writer's umask.
  BOOST_REQUIRE(::unlink(link.c_str()) == 0 && ::symlink(own.c_str(), link.c_str()) == 0);
  const ProcessResult exported = export_as_root();
  BOOST_TEST(exported.exit_code == 0, exported.err);
  const std::string owners = n.files.Path("owners.dtm");
  ::chmod(n.files.path().c_str(), 0777);
  const ProcessResult by_owner = RunAs(
      kAttacker, kAttacker,
      {"/bin/sh", "-c", "umask 077 && exec \"$0\" --socket \"$1\" export \"$2\" -o \"$3\"",
       n.s.bins.dtrain, n.s.d.socket(), id, owners},
      n.files.Path(""));
  BOOST_TEST(by_owner.exit_code == 0, by_owner.err);
  struct stat st {};
  BOOST_REQUIRE(::stat(owners.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  BOOST_TEST(ReadFile(owners) == ReadFile(model));  // the same model, whoever exported it
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace hostile_input_test
}  // namespace dtrain::testing
