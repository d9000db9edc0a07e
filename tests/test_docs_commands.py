"""Every shell block of README.md and docs/*.md runs, so a documented command that stops working
fails CI (issue 30).

The convention (README, "Tests"): a fenced block tagged `sh`, `bash` or `console` is executed as
one bash script (`set -e`) with the environment activated (`. .venv/bin/activate`), in one
shared temporary folder, in document order (README first, then the pages in mkdocs.yml's
order), so later blocks see what earlier ones built. Its exit code must be 0, or N when the
block's first lines say `# exit: N`. A block whose first line is `# not run: <reason>` is not
executed; those are listed and counted (few, each with a reason). Every fence carries a tag, so
no command hides in an untagged block.

The folder holds a copy of `examples/`, a small generated export that is not the example data
(`my_folder`, also `~/export` with HOME pointing into the folder), `.venv` (the environment
running the tests) and no workspace yet: README blocks run as a newcomer's would. The pages
under docs/ describe the example data as `make demo` builds it, so their blocks run with
`DIA_WORKSPACE` set to the README's `example_ws` (the example data with the expert's overrides)
where the question `roles` has been answered. Where a model is needed it is the scripted one
(`tests/docs_model.py`, `DIA_MODEL=fake/scripted`): it answers the documented questions with
the SQL in ANSWERS below.

A `text` block whose lines start with `dia ` or `make ` is a synopsis (`[--json]`, `a | b`
alternatives): it is listed and counted with the blocks not run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RUN_TAGS = {"sh", "bash", "console"}
NOT_RUN = re.compile(r"^#\s*not run:\s*(?P<reason>\S.*)$")
EXIT = re.compile(r"^#\s*exit:\s*(?P<code>\d+)")
MAX_NOT_RUN = 10  # blocks that cannot run offline (a PostgreSQL server, a key, PyPI); keep them few
BLOCK_TIMEOUT_S = 240
pytestmark = pytest.mark.heavy  # a minute on a quiet machine: collected first (tests/conftest.py)
FENCE = re.compile(r"^(?P<fence>`{3,})(?P<tag>[^`\s]*)\s*$")

QUESTION = "How many orders has each customer placed?"
ROLES = "How many staff members do we have in each role?"
ANSWERS = {ROLES: {
    "contract": {"kind": "analytical", "columns": ["role", "staff_count"],
                 "granularity": {"description": "role", "key_columns": ["role"]},
                 "order": [{"column": "staff_count", "direction": "desc"}], "filters": []},
    "sql": "SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role ORDER BY staff_count DESC",
}, QUESTION: {
    "contract": {"kind": "analytical", "columns": ["customer_name", "orders"],
                 "granularity": {"description": "customer", "key_columns": ["customer_name"]},
                 "order": [{"column": "orders", "direction": "desc"}], "filters": []},
    "sql": "SELECT c.customer_name, COUNT(o.order_id) AS orders FROM customers c "
           "LEFT JOIN orders o ON o.customer_id = c.customer_id "
           "GROUP BY c.customer_name ORDER BY orders DESC, c.customer_name",
}}


@dataclass(frozen=True)
class Block:
    path: str
    line: int
    tag: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def not_run(self) -> str | None:
        first = self.text.lstrip().splitlines()[0] if self.text.strip() else ""
        m = NOT_RUN.match(first.strip())
        return m.group("reason") if m else None

    @property
    def expected_exit(self) -> int:
        for line in self.text.splitlines():
            if m := EXIT.match(line.strip()):
                return int(m.group("code"))
        return 0


def doc_files() -> list[Path]:
    """README first, then docs pages in the site's nav order, then any page not in the nav."""
    nav: list[str] = []

    def walk(items: list) -> None:
        for item in items:
            for value in (item.values() if isinstance(item, dict) else [item]):
                walk(value) if isinstance(value, list) else nav.append(value)

    walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    pages = [ROOT / "docs" / name for name in nav]
    pages += sorted(p for p in (ROOT / "docs").glob("*.md") if p not in pages)
    return [ROOT / "README.md", *pages]


def fenced_blocks(path: Path) -> list[Block]:
    blocks: list[Block] = []
    open_at: tuple[int, str, str] | None = None
    body: list[str] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = FENCE.match(line)
        if open_at is None and m:
            open_at, body = (n, m.group("fence"), m.group("tag")), []
        elif open_at is not None and line.strip() == open_at[1]:
            blocks.append(Block(str(path.relative_to(ROOT)), open_at[0], open_at[2], "\n".join(body)))
            open_at = None
        elif open_at is not None:
            body.append(line)
    return blocks


ALL = [b for f in doc_files() for b in fenced_blocks(f)]
SHELL = [b for b in ALL if b.tag in RUN_TAGS]
RUN = [b for b in SHELL if b.not_run is None]
SYNOPSES = [b for b in ALL if b.tag == "text"
            and any(line.startswith(("dia ", "make ")) for line in b.text.splitlines())]
EXAMPLE_WS = "example_ws"


def write_my_folder(folder: Path) -> None:
    """A small export that is not the example data: customers and their orders."""
    folder.mkdir(parents=True)
    countries = ["France", "Kenya", "Chile", "Japan"]
    customers = ["customer_id,customer_name,country"]
    customers += [f"{i},Customer {i:02d},{countries[i % 4]}" for i in range(1, 21)]
    orders = ["order_id,customer_id,order_date,amount"]
    orders += [f"{100 + i},{1 + (i * 7) % 20},2026-0{1 + i % 9}-{10 + i % 18},{(i * 37) % 500 + 0.5:.2f}"
               for i in range(60)]
    (folder / "customers.csv").write_text("\n".join(customers) + "\n", encoding="utf-8")
    (folder / "orders.csv").write_text("\n".join(orders) + "\n", encoding="utf-8")


def expected_orders() -> list[tuple[str, int]]:
    counts: dict[str, int] = {f"Customer {i:02d}": 0 for i in range(1, 21)}
    for i in range(60):
        counts[f"Customer {1 + (i * 7) % 20:02d}"] += 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def make_place(base: Path) -> tuple[Path, dict[str, str]]:
    """The folder a newcomer works in, and the environment the commands run with."""
    place = base / "place"
    place.mkdir()
    shutil.copytree(ROOT / "examples", place / "examples")
    write_my_folder(place / "my_folder")
    home = place / "home"
    home.mkdir()
    shutil.copytree(place / "my_folder", home / "export")
    venv = Path(sys.prefix)
    assert (venv / "bin" / "activate").exists(), "the tests run from a virtual environment (.venv)"
    (place / ".venv").symlink_to(venv)
    hooks = base / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text("from tests.docs_model import install_on_import\n"
                                            "install_on_import()\n", encoding="utf-8")
    answers = base / "answers.json"
    answers.write_text(json.dumps(ANSWERS), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DIA_", "DAGSTER_", "PYTEST_"))}
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
                 "OLLAMA_API_BASE", "HOSTED_VLLM_API_BASE", "VIRTUAL_ENV"):
        env.pop(name, None)
    env.update({
        "HOME": str(home), "DAGSTER_HOME": str(base / "dagster_home"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(hooks)]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True", "DIA_DOCS_ANSWERS": str(answers),
        "DIA_MODEL": "fake/scripted",
    })
    return place, env


def run_script(script: str, place: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", "set -e\n" + script], cwd=place, env=env, text=True,
                          capture_output=True, timeout=BLOCK_TIMEOUT_S)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return make_place(tmp_path_factory.mktemp("docs_commands"))


@pytest.fixture(scope="module")
def example_env(place: tuple[Path, dict[str, str]]) -> dict[str, str]:
    """The docs pages' environment: the example workspace, with the question `roles` answered."""
    folder, env = place
    env = {**env, "DIA_WORKSPACE": str(folder / EXAMPLE_WS)}
    setup = (f"test -f {EXAMPLE_WS}/warehouse.duckdb || "
             "dia build -q examples/data --overrides examples/data/overrides.yaml\n"
             f'dia ask -q --no-memory --id roles "{ROLES}"')
    result = run_script(". .venv/bin/activate\n" + setup, folder, env)
    assert result.returncode == 0 and "status: answered" in result.stdout, result.stdout + result.stderr
    return env


def test_every_fence_says_what_it_holds() -> None:
    untagged = [b.id for b in ALL if not b.tag]
    assert not untagged, f"tag these fences (sh to run, text for anything else): {untagged}"
    assert len(RUN) >= 7 and any(b.path == "README.md" for b in RUN)
    assert any(b.path.startswith("docs/") for b in RUN)


def test_blocks_not_run_are_few_and_say_why() -> None:
    skipped = [(b.id, b.not_run) for b in SHELL if b.not_run is not None]
    skipped += [(b.id, "synopsis (text)") for b in SYNOPSES]
    print("\n".join(f"not run: {where}: {why}" for where, why in skipped))
    assert len(skipped) <= MAX_NOT_RUN, skipped
    assert all(len(why) >= 10 for _, why in skipped)


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_documented_block_runs(block: Block, place: tuple[Path, dict[str, str]],
                               request: pytest.FixtureRequest) -> None:
    folder, env = place
    if block.path != "README.md":
        env = request.getfixturevalue("example_env")
    result = run_script(". .venv/bin/activate\n" + block.text, folder, env)
    assert result.returncode == block.expected_exit, (
        f"{block.id} exited {result.returncode}, documented {block.expected_exit}\n"
        f"--- script\n{block.text}\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}")
    if "dia build my_folder" in block.text:
        assert "accepted: true" in result.stdout
    if "dia doctor" in block.text:
        assert "DIA_MODEL=fake/scripted: ok" in result.stdout


def test_the_readme_three_commands_answer_about_a_new_folder(tmp_path: Path) -> None:
    """Done-when of issue 30, literally: the README's three commands from nothing (no workspace)
    to an answer about a folder that is not the example data. `make install` is the environment
    running this test; the model variables become the scripted model's."""
    block = next(b for b in fenced_blocks(ROOT / "README.md") if "make install" in b.text and "dia ask" in b.text)
    commands = [line for line in block.text.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 3 and commands[0] == "make install", commands
    assert "DIA_MODEL=" in commands[2] and "_API_KEY=" in commands[2]
    folder, env = make_place(tmp_path)
    scripted = re.sub(r"\b\w+_API_KEY=\S+\s+DIA_MODEL=\S+", "DIA_MODEL=fake/scripted", commands[2])
    assert scripted != commands[2]
    assert not (folder / "dia_workspace").exists()
    result = run_script("\n".join([commands[1], scripted]), folder, env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "accepted: true" in result.stdout and "status: answered" in result.stdout
    rows = re.findall(r"^\| (Customer \d+) \| (\d+) \|$", result.stdout, flags=re.M)
    assert [(name, int(n)) for name, n in rows] == expected_orders()


def test_readme_links_point_at_pages_that_exist() -> None:
    """mkdocs checks links between pages; the README lives outside docs/, so check it here."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\((docs/[^)#]+)(?:#([^)]+))?\)", readme)
    assert len(targets) >= 15
    for page, anchor in targets:
        text = (ROOT / page).read_text(encoding="utf-8")
        if anchor:
            slugs = {re.sub(r"[^\w\- ]", "", h.strip("# ").lower()).replace(" ", "-")
                     for h in text.splitlines() if h.startswith("#")}
            assert anchor in slugs, (page, anchor)


def test_each_model_line_of_the_readme_reaches_dia_doctor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model block cannot run here (no key, no server), so each of its lines is checked
    another way: its variables are set as written, the provider's base URL is pointed at a
    refused loopback port, and `dia doctor` must get as far as calling that endpoint (a wrong
    variable name would stop it at "no API key" or at the provider's public address)."""
    import shlex
    import socket

    from typer.testing import CliRunner

    from dia_assets.cli.app import app
    from dia_assets.platform.model.doctor import base_vars, provider_of
    from dia_assets.platform.model.litellm import reset_door

    block = next(b for b in fenced_blocks(ROOT / "README.md")
                 if b.not_run and "export" in b.text and "DIA_MODEL=" in b.text)
    lines = [line for line in block.text.splitlines() if line.startswith("export ")]
    assert {provider_of(dict(a.split("=", 1) for a in shlex.split(line)[1:])["DIA_MODEL"])
            for line in lines} >= {"openai", "anthropic", "ollama", "hosted_vllm"}
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    refused = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    s.close()
    for line in lines:
        for name in [n for n in os.environ if n.startswith("DIA_") or n.endswith(("_API_KEY", "_API_BASE", "_BASE_URL"))]:
            monkeypatch.delenv(name)
        assigned = dict(a.split("=", 1) for a in shlex.split(line)[1:])
        for name, value in assigned.items():
            monkeypatch.setenv(name, value)
        model = assigned["DIA_MODEL"]
        named_bases = {n for n in assigned if n != "DIA_MODEL" and not n.endswith("_API_KEY")}
        assert named_bases <= set(base_vars(provider_of(model))), (line, "litellm reads another variable")
        base = next((v for v in base_vars(provider_of(model)) if v in assigned), base_vars(provider_of(model))[-1])
        monkeypatch.setenv(base, refused)
        reset_door(None)
        result = CliRunner().invoke(app, ["doctor"])
        reset_door(None)
        assert result.exit_code == 1, (line, result.output)
        assert model in result.stderr and "127.0.0.1" in result.stderr and "no API key" not in result.stderr, (line, result.stderr)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """`make docs` in CI; here too, so a broken link between pages fails `make test`."""
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, text=True, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "security" / "index.html").exists()
