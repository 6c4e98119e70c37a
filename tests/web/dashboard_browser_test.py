#!/usr/bin/env python3
"""The dashboard in a real browser: Debian's chromium, headless, driven over the Chrome DevTools
Protocol on a pipe (--remote-debugging-pipe: NUL-separated JSON on descriptors 3 and 4, so no
WebSocket library is needed).

A real dtraind with an HTTP listener and a token file runs a real job. The browser signs in with
the token (/?token=..., which sets the cookie and keeps the #fragment), opens the job's page and
must see, within one page load: the job running at its step of the total steps with an ETA and
its epoch with the rows of it taken, its
charts gaining points as the job advances, its latest metrics, its settings (the resolved job
file), times as YYYY-MM-DD HH:MM:SS, and log lines the worker prints arriving (each line says how
long after the daemon stored it; the figure is printed, not asserted). Then the jobs page lists
the job with its progress, the nodes page this daemon, and once cancelled the job's page its
final metrics. The job compresses its gradients, so its workers' table shows their ratio.
A small grid sweep (4 tiny trials, 2 at a time): its page's leaderboard and its chart of every
trial's curve grow while the trials run, and it ends with every trial listed; the sweeps page
lists it, and a trial's job page links back to it and shows its final per-class report.

    DTRAIND_BIN=build/daemon/dtraind DTRAIN_BIN=build/cmd/dtrain tests/web/dashboard_browser_test.py
    ... --screenshots docs/   # also writes dashboard-jobs.png, dashboard-job.png and
                              # dashboard-sweep.png there

Exit status 0 when every check holds; ctest runs it (tests/CMakeLists.txt).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """Headless chromium spoken to over its DevTools pipe."""

    def __init__(self, profile):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def descriptors():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self._process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--user-data-dir=" + profile, "--window-size=1280,1000", "about:blank"],
            pass_fds=(3, 4), preexec_fn=descriptors, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self._session = None

    def call(self, method, params=None):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if self._session and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._from_chrome, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed its DevTools pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(method + ": " + json.dumps(reply["error"]))
                return reply.get("result", {})

    def open(self, url):
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        self._session = self.call("Target.attachToTarget",
                                  {"targetId": target, "flatten": True})["sessionId"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(expression + ": " + json.dumps(result["exceptionDetails"]))
        return result["result"].get("value")

    def wait_for(self, expression, seconds, what):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError("the page did not show " + what + " within " + str(seconds) + " s")

    def screenshot(self, path):
        import base64
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        self._process.kill()
        self._process.wait()


def dtrain(env, socket_path, *args):
    done = subprocess.run([env["DTRAIN_BIN"], "--socket", socket_path, *args],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError("dtrain " + " ".join(args) + ": " + done.stderr)
    return done.stdout


def submit(env, socket_path, work, name, text):
    """Writes job file `name`.toml in `work` with `text` and submits it; returns the job's id."""
    path = os.path.join(work, name + ".toml")
    with open(path, "w") as f:
        f.write(text)
    return json.loads(dtrain(env, socket_path, "submit", path, "--no-wait", "--json"))["id"]


def main():
    screenshots = None
    if len(sys.argv) == 3 and sys.argv[1] == "--screenshots":
        screenshots = sys.argv[2]
    env = os.environ
    for name in ("DTRAIND_BIN", "DTRAIN_BIN"):
        if not env.get(name):
            sys.exit(name + " is not set (run through ctest)")
    if not os.path.exists(CHROMIUM):
        sys.exit("chromium is missing: scripts/install-deps installs it")

    work = tempfile.mkdtemp(prefix="dtrain-dashboard-")
    token = "e" * 48
    token_file = os.path.join(work, "http.token")
    with open(token_file, "w") as f:
        f.write(token + "\n")
    os.chmod(token_file, 0o600)
    port = free_port()
    config = os.path.join(work, "dtraind.toml")
    with open(config, "w") as f:
        f.write('[daemon]\nhttp = "127.0.0.1:%d"\nhttp_token_file = "%s"\n' % (port, token_file))
    sock = os.path.join(work, "d.sock")
    daemon = subprocess.Popen([env["DTRAIND_BIN"], "--config", config, "--socket", sock,
                               "--state-dir", os.path.join(work, "state")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    browser = None
    try:
        for _ in range(300):
            if os.path.exists(sock):
                break
            time.sleep(0.02)
        job_id = submit(env, sock, work, "job",
                        'name = "browsed"\n[data]\nformat = "synthetic"\nrows = 20000\n'
                        "[train]\nepochs = 1000\nbatch_size = 16\nlog_every = 500\n"
                        "eval_every = 2000\n[cluster]\nworkers = 2\nmode = \"sync\"\n"
                        "compression = \"bf16\"\n")
        for _ in range(500):
            status = json.loads(dtrain(env, sock, "status", str(job_id), "--json"))
            if status["state"] == "running" and status["step"] > 0:
                break
            time.sleep(0.02)

        browser = Browser(os.path.join(work, "profile"))
        base = "http://127.0.0.1:%d/" % port
        browser.open(base + "?token=" + token + "#/job/" + str(job_id))
        browser.wait_for("document.querySelector('#summary .state-running') !== null", 10,
                         "the job running")
        points = "[...document.querySelectorAll('canvas')].reduce((n, c) => n + Number(c.dataset.points), 0)"
        before = browser.wait_for(points + " || 0", 10, "points on its charts")
        delay = browser.wait_for(
            "(() => { const l = document.querySelector('#logs .line[data-delay]');"
            " return l ? Number(l.dataset.delay) + 1e-9 : 0; })()", 60,
            "a log line printed while it was open")
        time.sleep(1.0)
        after = browser.evaluate(points)
        updates = int(browser.evaluate("Number(document.getElementById('view').dataset.metricEvents)"))
        assert after > before, "the charts did not advance (%d points, then %d)" % (before, after)
        assert updates >= 2, "only %d metric updates drawn" % updates
        print("job page: charts went from %d to %d points over %d updates; a log line arrived "
              "%.3f s after the daemon stored it" % (before, after, updates, delay))
        total = json.loads(dtrain(env, sock, "status", str(job_id), "--json"))["total_steps"]
        assert isinstance(total, int) and total > 0, total
        summary = browser.wait_for(
            "(() => { const t = document.getElementById('summary').textContent;"
            " return t.includes(' steps/s, ETA ') ? t : ''; })()", 20, "the step of the total and an ETA")
        assert ("/%d (" % total) in summary, summary
        # A sync job: its epoch and the rows of it taken, of the rows an epoch takes.
        per_epoch = json.loads(dtrain(env, sock, "status", str(job_id), "--json"))["rows_per_epoch"]
        assert isinstance(per_epoch, int) and per_epoch > 0, per_epoch
        summary = browser.wait_for(
            "(() => { const t = document.getElementById('summary').textContent;"
            " return t.includes(' of its %d rows') ? t : ''; })()" % per_epoch, 20,
            "the epoch and its rows")
        print("job page: " + summary)
        browser.wait_for("document.querySelector('#metrics tr[data-metric=\"train_loss\"]') !== null",
                         10, "the latest metrics")
        settings = browser.evaluate("document.getElementById('settings').textContent")
        assert 'name = "browsed"' in settings and "[train]" in settings, settings
        started, ended = browser.evaluate(
            "(() => { const row = document.querySelector('#workers tbody tr');"
            " return [row.lastElementChild.previousElementSibling.textContent,"
            " row.lastElementChild.textContent]; })()")
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", started), started
        # Empty while the worker runs, its end time once it has ended.
        assert ended == "" or re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", ended), ended
        # Each worker's step times over its last window (a straggler's p95 would stand out).
        steps = browser.wait_for(
            "(() => { const c = document.querySelector('#workers td[data-step=\"1\"]');"
            " return c && c.textContent !== '-' ? c.textContent : ''; })()", 20,
            "worker 1's step times")
        assert re.fullmatch(r"[0-9.]+ / [0-9.]+", steps), steps
        print("job page: worker 1's step ms p50 / p95 " + steps)
        # A job that compresses shows each worker's wire bytes and compression ratio (bf16 between
        # two workers: fewer bytes than the uncompressed exchange, whose votes weigh on a model
        # this small).
        ratio = browser.wait_for(
            "(() => { const c = document.querySelector('#workers td[data-ratio=\"0\"]');"
            " return c && c.textContent !== '-' ? Number(c.textContent) : 0; })()", 20,
            "the lead worker's compression ratio")
        assert 1.0 < ratio <= 2.0, ratio
        print("job page: worker 0's compression ratio %.1f" % ratio)
        # And, as every job of several workers, the communication each worker waited for.
        exposed = browser.wait_for(
            "(() => { const c = document.querySelector('#workers td[data-exposed=\"0\"]');"
            " return c && c.textContent !== '-' ? c.textContent : ''; })()", 20,
            "the lead worker's exposed communication")
        assert float(exposed) >= 0.0, exposed
        print("job page: worker 0 waited %s s for its exchanges" % exposed)
        if screenshots:
            browser.screenshot(os.path.join(screenshots, "dashboard-job.png"))

        browser.evaluate("location.hash = '#/'")
        row = browser.wait_for(
            "(() => { const r = document.querySelector('tr[data-job=\"%d\"]');"
            " return r ? [...r.cells].map(c => c.textContent).join(' | ') : ''; })()" % job_id, 10, "the job in the jobs list")
        assert "running" in row and "browsed" in row and "%" in row, row
        print("jobs page: " + row)
        if screenshots:
            browser.screenshot(os.path.join(screenshots, "dashboard-jobs.png"))

        browser.evaluate("location.hash = '#/nodes'")
        browser.wait_for("document.querySelector('#nodes td') !== null && "
                         "document.getElementById('nodes').textContent.includes('this daemon')",
                         10, "this daemon among the nodes")
        print("nodes page: this daemon listed")
        dtrain(env, sock, "cancel", str(job_id))
        for _ in range(500):
            if json.loads(dtrain(env, sock, "status", str(job_id), "--json"))["state"] == "cancelled":
                break
            time.sleep(0.05)
        browser.evaluate("location.hash = '#/job/%d'" % job_id)
        browser.wait_for("[...document.querySelectorAll('h2')].some(h => h.textContent === 'Final metrics')"
                         " && document.querySelector('#metrics tr[data-metric]') !== null", 10,
                         "the final metrics of the cancelled job")
        print("job page: final metrics of the cancelled job")

        # A job with a backup worker: each step goes on with the first two of three gradients, so
        # the workers' table counts the steps that went on without each worker's.
        backup_id = submit(env, sock, work, "backups",
                           'name = "backups"\n[data]\nformat = "synthetic"\nrows = 20000\n'
                           "[train]\nepochs = 1000\nbatch_size = 16\nlog_every = 100\n"
                           '[cluster]\nworkers = 3\nmode = "sync"\nallreduce = "ps"\n'
                           "servers = 1\nbackup_workers = 1\n")
        browser.evaluate("location.hash = '#/job/%d'" % backup_id)
        drops = browser.wait_for(
            "(() => { const cells = [...document.querySelectorAll('#workers td[data-dropped]')];"
            " return cells.reduce((n, c) => n + (Number(c.textContent) || 0), 0); })()", 60,
            "the workers' dropped gradients")
        assert drops > 0, drops
        print("job page: the workers' dropped gradients add up to %d" % drops)
        dtrain(env, sock, "cancel", str(backup_id))

        # Tiny trials of a few seconds each (a step takes microseconds), 30 evaluations each.
        sweep_file = os.path.join(work, "swept.toml")
        with open(sweep_file, "w") as f:
            f.write('name = "swept"\n[data]\nformat = "synthetic"\nrows = 400\ntest_rows = 100\n'
                    'features = 4\nclasses = 2\n[model]\ntype = "softmax"\n'
                    "[train]\nsteps = 600000\nepochs = 0\nbatch_size = 16\nthreads = 1\n"
                    "log_every = 20000\neval_every = 20000\n"
                    '[sweep]\nmethod = "grid"\nmetric = "eval_loss"\nmax_concurrent = 2\n'
                    '[sweep.parameters]\n"optimizer.lr" = { values = [0.05, 0.2] }\n'
                    '"train.batch_size" = { values = [8, 16] }\n')
        sweep_id = json.loads(dtrain(env, sock, "sweep", "submit", sweep_file, "--json"))["id"]
        browser.evaluate("location.hash = '#/sweep/%d'" % sweep_id)
        curve = "(() => { const c = document.querySelector('canvas[data-chart=\"sweep\"]');" \
                " return c ? [Number(c.dataset.series), Number(c.dataset.points)] : [0, 0]; })()"
        first = browser.wait_for("(%s)[1]" % curve, 30, "a trial's curve on the sweep's chart")
        first = browser.evaluate(curve)
        grown = browser.wait_for(
            "(() => { const [s, p] = %s; return s > %d || p > %d ? [s, p] : null; })()"
            % (curve, first[0], first[1]), 30, "the sweep's chart gaining series or points")
        done = browser.wait_for(
            "(() => { const rows = [...document.querySelectorAll('#leaderboard tr[data-trial]')];"
            " return rows.length === 4 && rows.every(r => r.textContent.includes('succeeded'))"
            " && document.querySelector('#sweep-summary .state-succeeded') ? rows.length : 0; })()",
            60, "every trial succeeded on the leaderboard")
        series = browser.evaluate(curve)
        assert series[0] == 4, series
        board = json.loads(dtrain(env, sock, "sweep", "status", str(sweep_id), "--json"))
        shown = browser.evaluate("[...document.querySelectorAll('#leaderboard tr[data-trial]')]"
                                 ".map(r => Number(r.dataset.trial))")
        assert shown == [t["trial"] for t in board["trials"]], (shown, board["trials"])
        best = browser.evaluate("document.querySelector('#leaderboard tr.best').dataset.trial")
        assert int(best) == board["best"]["trial"], (best, board["best"])
        print("sweep page: the chart went from %d series (%d points) to %d (%d), then %d trials "
              "ranked as dtrain sweep status ranks them, best trial %s"
              % (first[0], first[1], grown[0], grown[1], done, best))
        if screenshots:
            browser.screenshot(os.path.join(screenshots, "dashboard-sweep.png"))
        best_job = board["trials"][0]["job"]
        browser.evaluate("document.querySelector('#leaderboard tr.best a').click()")
        browser.wait_for("location.hash === '#/job/%d' && document.querySelector("
                         "'#sweep-link a[href=\"#/sweep/%d\"]') !== null" % (best_job, sweep_id),
                         10, "the trial's job page linking back to its sweep")
        # A finished classification job's page shows its final per-class report: the confusion
        # matrix of its JOB object's class_report, and a row of scores per class and average.
        report = json.loads(dtrain(env, sock, "status", str(best_job), "--json"))["class_report"]
        cells = browser.wait_for(
            "(() => { const cells = [...document.querySelectorAll('#class-report td[data-confusion]')];"
            " return cells.length ? cells.map(c => Number(c.textContent)) : null; })()",
            10, "the trial's per-class report")
        assert cells == [n for row in report["confusion"] for n in row], (cells, report)
        rows = browser.evaluate("[...document.querySelectorAll('#class-report tr[data-class]')]"
                                ".map(r => r.dataset.class)")
        assert rows == ["0", "1", "macro", "micro"], rows
        print("job page: the final per-class report, confusion matrix %s" % report["confusion"])
        browser.evaluate("location.hash = '#/sweeps'")
        row = browser.wait_for(
            "(() => { const r = document.querySelector('tr[data-sweep=\"%d\"]');"
            " return r ? [...r.cells].map(c => c.textContent).join(' | ') : ''; })()" % sweep_id,
            10, "the sweep in the sweeps list")
        assert "swept" in row and "4/4" in row and "succeeded" in row, row
        print("sweeps page: " + row)
    finally:
        if browser:
            browser.close()
        daemon.terminate()
        daemon.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    print("dashboard_browser: every check held")


if __name__ == "__main__":
    main()
