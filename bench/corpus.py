"""`tapelab lint` on real code, against findings read by hand: precision per rule family.

The corpus is public TensorFlow projects from PyPI, pinned by exact file and SHA-256 in bench/corpus.toml,
fetched with pip on first use into a cache outside the repository ($TAPELAB_CORPUS, default
~/.cache/tapelab/lint-corpus) and unpacked to their `.py` files: third-party code is never committed. Every
finding lint has printed on it was read by hand and labelled in bench/corpus_labels.toml (true: on TF 2.21 /
Keras 3.15 the code breaks or misbehaves as the finding says; false: it does not).

    python bench/corpus.py                   # this checkout's linter
    python bench/corpus.py --src OTHER/src   # another checkout's (e.g. a worktree of an older commit)

prints, per family (TPL1 tape rules, TPL2 Keras rules), the findings, how many are labelled true and false,
the precision, and lists every false positive, every finding nobody has labelled yet (exit 1: label it), and
every true positive that is no longer found.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINS = HERE / "corpus.toml"
LABELS = HERE / "corpus_labels.toml"
FAMILIES = {"TPL1": "tape rules", "TPL2": "Keras 2 -> 3 rules"}


def _cache() -> Path:
    return Path(os.environ.get("TAPELAB_CORPUS", Path.home() / ".cache" / "tapelab" / "lint-corpus"))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fetch(package: dict, files: Path) -> Path:
    """The package's pinned file, downloaded with pip unless the cache holds it with the right hash."""
    target = files / package["file"]
    if not (target.is_file() and _sha256(target) == package["sha256"]):
        kind = "--only-binary=:all:" if package["file"].endswith(".whl") else "--no-binary=:all:"
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", kind, "--dest", str(files),
                        f"{package['name']}=={package['version']}"], check=True)
    if not target.is_file() or _sha256(target) != package["sha256"]:
        raise SystemExit(f"{target}: missing or not the pinned file (sha256 {package['sha256']}); delete it and "
                         "rerun, or fix bench/corpus.toml")
    return target


def _unpack(archive: Path, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            wheel.extractall(into, [n for n in wheel.namelist() if n.endswith(".py")])
    else:
        with tarfile.open(archive) as sdist:
            sdist.extractall(into, [m for m in sdist.getmembers() if m.isfile() and m.name.endswith(".py")],
                             filter="data")


def corpus_root() -> Path:
    """The unpacked corpus (one folder `<name>-<version>` per package), fetched and unpacked on first use."""
    cache = _cache()
    root = cache / "src"
    for package in tomllib.loads(PINS.read_text())["package"]:
        folder = root / f"{package['name']}-{package['version']}"
        marker = folder / ".unpacked"
        if not (marker.is_file() and marker.read_text() == package["sha256"]):
            _unpack(_fetch(package, cache / "files"), folder)
            marker.write_text(package["sha256"])
    return root


def findings(root: Path, src: Path | None = None) -> list[dict]:
    """What `tapelab lint --format json` prints over the corpus (with another checkout's sources if given)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    run = subprocess.run([sys.executable, "-m", "tapelab.cli", "lint", "--format", "json", "."], cwd=root,
                         capture_output=True, text=True, env=env)
    if run.returncode not in (0, 1):
        raise SystemExit(f"tapelab lint failed ({run.returncode}): {run.stderr.strip()}")
    return json.loads(run.stdout)


def _key(found: dict) -> tuple[str, str]:
    cell = f"cell {found['cell']}:" if found.get("cell") else ""
    return f"{Path(found['path']).as_posix().removeprefix('./')}:{cell}{found['line']}", found["rule"]


def report(found: list[dict], labels: list[dict]) -> int:
    verdicts = {(label["at"], label["rule"]): label for label in labels}
    seen = {_key(f): f for f in found}
    unlabelled = []
    for prefix, family in FAMILIES.items():
        mine = [k for k in seen if k[1].startswith(prefix)]
        true = [k for k in mine if verdicts.get(k, {}).get("verdict") is True]
        false = [k for k in mine if verdicts.get(k, {}).get("verdict") is False]
        unlabelled += [k for k in mine if k not in verdicts]
        decided = len(true) + len(false)
        share = f"{len(true) / decided:.0%}" if decided else "n/a"
        per_rule = collections.Counter(k[1] for k in mine)
        print(f"{family}: {len(mine)} findings ({', '.join(f'{r} {n}' for r, n in sorted(per_rule.items()))}); "
              f"{len(true)} true, {len(false)} false: precision {share}")
        for k in false:
            print(f"  false: {k[0]} {k[1]}: {verdicts[k]['why']}")
    lost = [k for k, label in verdicts.items() if label["verdict"] is True and k not in seen]
    for k in lost:
        print(f"true positive no longer found: {k[0]} {k[1]}: {verdicts[k]['why']}")
    for k in unlabelled:
        print(f"not labelled yet: {k[0]} {k[1]}: {seen[k]['message']}")
    return 1 if unlabelled else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", type=Path, help="lint with the tapelab package under this folder instead")
    args = parser.parse_args(argv)
    root = corpus_root()
    files = sum(1 for _ in root.rglob("*.py"))
    print(f"corpus: {len(tomllib.loads(PINS.read_text())['package'])} packages, {files} .py files, in {root}")
    return report(findings(root, args.src), tomllib.loads(LABELS.read_text()).get("label", []))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
