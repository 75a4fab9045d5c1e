"""scripts/bench_render.py: builds a real thread, renders the chat page on it, prints one JSON line.

A process of its own, as `python -m core bench` runs it: stdout must carry nothing but that line. The data
directory holds the session's indexed samples, so the script embeds no sample corpus again."""

import json
import shutil
import subprocess
import sys

from support.paths import ROOT

SCRIPT = ROOT / "scripts" / "bench_render.py"


def test_bench_render_prints_one_json_line_for_the_rendered_thread(sample_data_dir, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(sample_data_dir / "chroma", data / "chroma")
    out = subprocess.run([sys.executable, str(SCRIPT), "--turns", "3", "--runs", "2", "--data-dir", str(data)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    [line] = out.stdout.splitlines()  # nothing else on stdout: `python -m core bench` parses it
    report = json.loads(line)
    assert report["messages"] == 6 and report["runs"] == 2  # the script checks 6 bubbles were on the page
    assert report["p50_s"] > 0 and report["max_s"] > 0  # both measured (the figures themselves are the benchmark's)
