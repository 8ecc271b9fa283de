"""``python -m fa_opt``: argument errors and failures are one ``error:`` line
(never a traceback), exit 2 for usage errors and 1 for failed compiles."""

import os
import subprocess
import sys

import pytest

from fa_opt.__main__ import main
from fa_opt.config import SUPPORTED_CHIPS

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_main(capsys, argv):
    try:
        rc = main(argv)
    except SystemExit as exit_:
        rc = exit_.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


def _error_line(err):
    lines = [l for l in err.splitlines() if "error:" in l]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("argv, match", [
    (["compile", "--head-dim", "0"], "argument --head-dim: must be > 0"),
    (["compile", "--head-dim", "x"], "argument --head-dim: expected an integer"),
    (["compile", "--head-dim-v", "-1"], "argument --head-dim-v: must be > 0"),
    (["compile", "--scale", "-1"], "argument --scale: must be finite and positive"),
    (["compile", "--scale", "0"], "argument --scale: must be finite and positive"),
    (["compile", "--scale", "inf"], "argument --scale: must be finite and positive"),
    (["compile", "--scale", "nan"], "argument --scale: must be finite and positive"),
    (["compile", "--scale", "abc"], "argument --scale: expected 'default' or a number"),
    (["compile", "--scale", "1e-300"], "argument --scale: must be representable in f32"),
    (["compile", "--scale", "1e39"], "argument --scale: must be representable in f32"),
    (["compile", "--batch", "-3"], "argument --batch: must be >= 0"),
    (["compile", "--seqlen-q", "-1"], "argument --seqlen-q: must be >= 0"),
    (["compile", "--block-m", "0"], "argument --block-m: must be > 0"),
    (["compile", "--chip", "sm_100"], "argument --chip: invalid choice: 'sm_100'"),
    (["compile", "--chip", "bogus"], "argument --chip: invalid choice"),
    (["compile", "--tma", "yes"], "argument --tma: invalid choice: 'yes'"),
    (["compile", "--producer-warp", "1"],
     "argument --producer-warp: invalid choice: '1'"),
    (["compile", "--tiles-per-block", "3"],
     "argument --tiles-per-block: invalid choice: 3"),
    (["compile", "--index-bitwidth", "16"],
     "argument --index-bitwidth: invalid choice: 16"),
    (["compile", "--tiles-per-block", "2", "--producer-warp", "false"],
     "tiles_per_block=2 needs the producer warpgroup: it cannot be combined "
     "with producer_warp=False"),
    (["compile", "--backward-producer-warp", "on"],
     "argument --backward-producer-warp: invalid choice: 'on'"),
    (["compile", "--backward-producer-warp", "true", "--deterministic",
      "true"], "backward_producer_warp=True is a form of the dq-atomics "
     "backward: it cannot be combined with deterministic=True"),
    (["compile", "--deterministic", "yes"],
     "argument --deterministic: invalid choice: 'yes'"),
    (["compile", "--dq-atomics", "true", "--deterministic", "true"],
     "dq_atomics=True adds dq with f32 atomics, which is not bitwise "
     "reproducible: it cannot be combined with deterministic=True"),
    (["compile", "--out", "/proc/nope"], "argument --out: cannot create directory '/proc/nope'"),
    (["compile", "--option", "dq-cluster-pairs"],
     "argument --option: expected KEY=VALUE (a fa-to-ptx option), got "
     "'dq-cluster-pairs'"),
    (["compile", "--option", "Bad=1"], "argument --option: expected KEY=VALUE"),
    (["compile", "--option", "stages=3 output-dir=/tmp"],
     "argument --option: expected KEY=VALUE"),
    (["compile", "--option", "stages="], "argument --option: expected KEY=VALUE"),
    (["compile", "--option", "tma=false"],
     "argument --option: tma has its own flag: use --tma"),
    (["compile", "--option", "output-dir=x"],
     "argument --option: output-dir has its own flag: use --out"),
    (["compile", "--option", "stages=3", "--option", "stages=2"],
     "extra: stages given twice"),
    (["list", "/nonexistent"], "error: no such directory '/nonexistent'"),
])
def test_usage_errors_exit_2_with_one_error_line(capsys, argv, match,
                                                 monkeypatch, tmp_path):
    # Nothing may be compiled before the error: no fa-opt around.
    monkeypatch.setenv("FA_OPT", str(tmp_path / "no-fa-opt"))
    monkeypatch.setenv("FA_OPT_CACHE_DIR", str(tmp_path / "cache"))
    rc, out, err = _run_main(capsys, argv)
    assert rc == 2 and out == ""
    line = _error_line(err)
    assert line.startswith("python -m fa_opt ") and match in line


def test_out_that_is_a_file_is_a_usage_error(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FA_OPT", str(tmp_path / "no-fa-opt"))
    target = tmp_path / "file"
    target.write_text("")
    rc, _, err = _run_main(capsys, ["compile", "--out", str(target)])
    assert rc == 2 and "argument --out: cannot create directory" in _error_line(err)


def test_chip_choices_are_the_supported_chips(capsys, tmp_path, monkeypatch):
    assert SUPPORTED_CHIPS == ("sm_70", "sm_72", "sm_75", "sm_80", "sm_86",
                               "sm_87", "sm_89", "sm_90", "sm_90a")
    # Each supported chip gets past argument parsing (to the missing fa-opt).
    monkeypatch.setenv("FA_OPT", str(tmp_path / "no-fa-opt"))
    for chip in SUPPORTED_CHIPS:
        rc, _, err = _run_main(capsys, ["compile", "--chip", chip])
        assert rc == 1 and "FA_OPT is set to" in _error_line(err)


def test_missing_fa_opt_exits_1(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FA_OPT", str(tmp_path / "no-fa-opt"))
    rc, out, err = _run_main(capsys, ["compile"])
    assert rc == 1 and out == ""
    assert _error_line(err).startswith("python -m fa_opt: error: FA_OPT is set to")


def test_compilation_error_exits_1(capsys, tmp_path, monkeypatch):
    tool = tmp_path / "fa-opt"
    tool.write_text("#!/bin/sh\n"
                    "[ \"$1\" = --version ] && { echo fake 1.0; exit 0; }\n"
                    "echo 'input.mlir:3:5: error: boom' >&2\n"
                    "echo 'a second line' >&2\nexit 1\n")
    tool.chmod(0o755)
    monkeypatch.setenv("FA_OPT", str(tool))
    monkeypatch.setenv("FA_OPT_CACHE_DIR", str(tmp_path / "cache"))
    rc, out, err = _run_main(capsys, ["compile", "--head-dim", "64"])
    assert rc == 1 and out == ""
    assert len(err.strip().splitlines()) == 1
    line = _error_line(err)
    assert line.startswith("python -m fa_opt: error: bf16_d64_none: fa-opt failed (exit 1)")
    assert "error: boom" in line


def test_list_reports_each_missing_dir(capsys, tmp_path):
    rc, _, err = _run_main(capsys, ["list", str(tmp_path), "/nonexistent"])
    assert rc == 2 and "no such directory '/nonexistent'" in _error_line(err)
    rc, out, err = _run_main(capsys, ["list", str(tmp_path)])
    assert (rc, out, err) == (0, "", "")


def test_list_warns_about_unreadable_manifests(capsys, tmp_path):
    """Each manifest that cannot be read is named on one warning line (and
    left out); the readable ones are listed; exit 0."""
    from test_manifest import BACKWARD, DOC_EXAMPLE
    (tmp_path / "good.manifest").write_text(DOC_EXAMPLE)
    (tmp_path / "bwd.manifest").write_text(BACKWARD)
    (tmp_path / "binary.manifest").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "zero.manifest").write_text(
        DOC_EXAMPLE.replace("block_m 64", "block_m 0"))
    # Not regular files: a FIFO would block a read; a folder is ignored.
    os.mkfifo(tmp_path / "fifo.manifest")
    (tmp_path / "folder.manifest").mkdir()
    rc, out, err = _run_main(capsys, ["list", str(tmp_path)])
    assert rc == 0
    assert f"{tmp_path / 'good.manifest'}: bf16 d64 top_left chip sm_90a" in out
    assert f"{tmp_path / 'bwd.manifest'}: backward bf16 d64 top_left" in out
    warnings = err.strip().splitlines()
    assert len(warnings) == 3, err
    assert warnings[1] == (f"python -m fa_opt list: warning: skipped "
                           f"{tmp_path / 'fifo.manifest'}: not a regular file")
    assert warnings[0].startswith(
        f"python -m fa_opt list: warning: skipped {tmp_path / 'binary.manifest'}: ")
    # The path once, with the manifest's line number.
    assert warnings[2] == (
        f"python -m fa_opt list: warning: skipped {tmp_path / 'zero.manifest'}"
        ":17: expected a positive integer for 'block_m', got 0")
    rc, _, err = _run_main(capsys, ["list", str(tmp_path / "good.manifest")])
    assert rc == 2 and "not a directory" in _error_line(err)


@pytest.mark.parametrize("entry, reason", [
    ("{broken", "Expecting property name"),
    ('{"config": {"dtype": "bf16", "head_dim": 64}, "options": null, '
     '"forward": ["good.manifest"]}', "no 'options' object with a 'chip'"),
    ('{"config": {"dtype": "bf16", "head_dim": 64}, "options": {}, '
     '"forward": ["good.manifest"]}', "no 'options' object with a 'chip'"),
    ('{"config": {"dtype": "bf16", "head_dim": 64}, '
     '"options": {"chip": "sm_90a"}, "forward": []}',
     "no 'forward' list of manifest names"),
    ('[1, 2]', "not a JSON object"),
])
def test_list_warns_about_a_broken_entry_and_reads_its_manifests(
        capsys, tmp_path, entry, reason):
    """An fa_opt.json this package did not write (broken JSON, no chip,
    no forward manifest) is named on a warning line, not a traceback, and
    the manifests next to it are read as plain ones."""
    from test_manifest import DOC_EXAMPLE
    (tmp_path / "fa_opt.json").write_text(entry)
    (tmp_path / "good.manifest").write_text(DOC_EXAMPLE)
    rc, out, err = _run_main(capsys, ["list", str(tmp_path)])
    assert rc == 0
    assert f"{tmp_path / 'good.manifest'}: bf16 d64 top_left chip sm_90a" in out
    assert err.startswith(f"python -m fa_opt list: warning: skipped "
                          f"{tmp_path / 'fa_opt.json'}: {reason}"), err


@pytest.mark.parametrize("argv, option", [
    ([], None), (["--tma", "true"], "tma=true"), (["--tma", "false"], "tma=false"),
    (["--producer-warp", "false"], "producer-warp=false"),
    (["--producer-warp", "true"], "producer-warp=true"),
    (["--backward-producer-warp", "auto"], "backward-producer-warp=auto"),
    (["--backward-producer-warp", "true"], "backward-producer-warp=true"),
    (["--backward-producer-warp", "false"], "backward-producer-warp=false"),
    (["--dq-atomics", "false"], "dq-atomics=false"),
    (["--dq-atomics", "true"], "dq-atomics=true"),
    (["--deterministic", "true"], "deterministic=true"),
    (["--deterministic", "false"], "deterministic=false"),
    (["--option", "stages=3"], "stages=3"),
    (["--option", "stages=3", "--option", "dq-cluster-pairs=true"],
     "dq-cluster-pairs=true stages=3"),
    (["--option", "features=+ptx81"], "features=+ptx81"),
])
def test_tma_is_passed_to_fa_to_ptx_only_when_given(capsys, tmp_path,
                                                    monkeypatch, argv, option):
    """--tma, --producer-warp, --backward-producer-warp, --dq-atomics and
    --deterministic become fa-to-ptx's options of those names, --option
    KEY=VALUE passes itself (sorted by key); without them, fa-to-ptx's defaults
    apply (nothing passed)."""
    log = tmp_path / "args"
    tool = tmp_path / "fa-opt"
    tool.write_text("#!/bin/sh\n"
                    "[ \"$1\" = --version ] && { echo fake 1.0; exit 0; }\n"
                    f"echo \"$@\" >> '{log}'\n"
                    "echo 'error: stop here' >&2\nexit 1\n")
    tool.chmod(0o755)
    monkeypatch.setenv("FA_OPT", str(tool))
    monkeypatch.setenv("FA_OPT_CACHE_DIR", str(tmp_path / "cache"))
    rc, _, _ = _run_main(capsys, ["compile", "--no-backward", *argv])
    assert rc == 1
    pipeline = [w for w in log.read_text().split() if "--fa-to-ptx" in w]
    assert len(pipeline) == 1, log.read_text()
    passed = [w for w in log.read_text().split()
              if w.startswith(("tma=", "producer-warp=", "dq-atomics=",
                               "deterministic=", "backward-producer-warp=",
                               "stages=", "dq-cluster-pairs=",
                               "features="))]
    assert passed == (option.split() if option else [])


def test_compile_and_list_with_fa_opt(capsys, tmp_path, fa_opt_tool, cache_root):
    out_dir = tmp_path / "kernels"
    rc, out, err = _run_main(capsys, ["compile", "--scale", "1e-5",
                                      "--no-backward", "--out", str(out_dir)])
    assert rc == 0 and err == "" and "scale 1e-05" in out
    rc, out, err = _run_main(capsys, ["list", str(out_dir)])
    assert rc == 0 and "bf16_d64_none scale 1e-05" in out
    assert "options" not in out
    # A set compiled with options says which.
    rc, out, err = _run_main(capsys, ["compile", "--scale", "1e-5",
                                      "--no-backward", "--tma", "false",
                                      "--option", "pair-key-blocks=true",
                                      "--out", str(out_dir)])
    assert rc == 0 and err == ""
    rc, out, err = _run_main(capsys, ["list", str(out_dir)])
    lines = sorted(out.splitlines(), key=lambda line: "options" in line)
    assert len(lines) == 2 and "options" not in lines[0], out
    assert lines[1].endswith(" backward no options tma=false "
                             "pair-key-blocks=true"), out


def test_compile_and_list_say_which_entries_have_a_short_forward(
        capsys, tmp_path, fa_opt_tool, cache_root):
    """Head dim 64 bf16 gets the short forward by default, not with
    --short-forward false nor at head dim 128; compile and list say so."""
    out_dir = str(tmp_path / "k")
    rc, out, err = _run_main(capsys, ["compile", "--head-dim", "64", "128",
                                      "--no-backward", "--out", out_dir])
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert "short forward (seqlen_k <= 2048)" in lines[0]
    assert "short forward" not in lines[1]
    rc, out, err = _run_main(capsys, ["compile", "--short-forward", "false",
                                      "--no-backward", "--out", out_dir])
    assert rc == 0 and "short forward" not in out
    rc, out, err = _run_main(capsys, ["list", out_dir])
    assert rc == 0 and err == ""
    assert sorted("short_forward seqlen_k<=2048" in line
                  for line in out.splitlines()) == [False, False, True], out


def test_compile_warns_when_the_short_forward_fails(capsys, tmp_path,
                                                   fa_opt_tool, cache_root,
                                                   monkeypatch):
    """fa-opt failing on the short forward only: exit 0 with the default
    forward, and a warning that quotes fa-opt's error."""
    fake = tmp_path / "fa-opt"
    fake.write_text("#!/bin/sh\ncase \"$*\" in *block-m=64*) echo "
                    "'x.mlir:1:1: error: no short' >&2; exit 1;; esac\n"
                    "exec " + fa_opt_tool + " \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("FA_OPT", str(fake))
    rc, out, err = _run_main(capsys, ["compile", "--no-backward"])
    assert rc == 0 and "short forward" not in out
    assert err.strip() == ("python -m fa_opt compile: warning: bf16_d64_none: "
                           "no short forward: x.mlir:1:1: error: no short")


def test_list_options_text():
    """The options of a cache entry as `list` prints them: fields by their
    fa-to-ptx names, then extra; chip, unset fields and entries without
    options print nothing."""
    from fa_opt.__main__ import _options_text
    from fa_opt.config import CompileOptions
    assert _options_text(CompileOptions().to_dict()) == ""
    assert _options_text(None) == ""
    text = _options_text(CompileOptions(block_m=64, dq_atomics=False,
                                        backward_producer_warp="auto",
                                        extra=("stages=3",)).to_dict())
    assert text == (" options block-m=64 dq-atomics=false "
                    "backward-producer-warp=auto stages=3")


def test_compile_warns_when_the_backward_fails(capsys, tmp_path, fa_opt_tool,
                                               cache_root):
    """A backward fa-opt cannot compile (block-m 256: the wgmma backward's
    dk/dv accumulators do not fit the registers; the forward takes 16
    warps) leaves a usable forward: exit 0, with a warning that quotes
    fa-opt's error."""
    rc, out, err = _run_main(capsys, ["compile", "--block-m", "256",
                                      "--out", str(tmp_path / "k")])
    assert rc == 0 and "no backward" in out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(
        "python -m fa_opt compile: warning: bf16_d64_none: no backward "
        "kernels: ")
    assert "registers per thread" in lines[0]
    rc, out, err = _run_main(capsys, ["compile", "--block-m", "256",
                                      "--no-backward"])
    assert rc == 0 and err == ""


def test_module_entry_point_has_no_traceback():
    """The real ``python -m fa_opt`` process, torch unimportable."""
    code = ("import sys, runpy; sys.modules['torch'] = None; "
            "sys.argv = ['fa_opt'] + sys.argv[1:]; "
            "runpy.run_module('fa_opt', run_name='__main__')")
    for argv, rc in ((["list", "/nonexistent"], 2),
                     (["compile", "--head-dim", "0"], 2)):
        proc = subprocess.run([sys.executable, "-c", code, *argv],
                              cwd=PYTHON_DIR, capture_output=True, text=True)
        assert proc.returncode == rc, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""
        assert proc.stderr.strip().splitlines()[-1].startswith(
            "python -m fa_opt ")
