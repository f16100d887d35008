"""The statement-routing check: every statement on a bank's rows names one bank.

Distributed by ``bank_id`` (docs/scaling.md, Citus), a statement that does not pin one bank goes to
every shard. On every run of the suite (CI's included; ``MEMORYHUB_BANK_ROUTING``: ``strict`` by
default, ``report``, or ``off``) every SQL statement the tests send through Django is looked at: one that touches a bank-scoped table must pin the bank by equality
on ``bank_id`` (a parameter or a literal, or a join on another table's ``bank_id``), or insert rows
that carry ``bank_id``. The code that sent it is found on the stack; statements sent from the
allow-list below are let through; so are the tests' own statements (set-up and looks at the database
from a test's code, also when the application calls that code, as it calls a stand-in). ``report``
lists the others at the end of the run; ``strict`` fails the test that sent one. The allow-list is
printed with its reasons and hit counts either way.

Every connection Django opens during a test is checked, in whatever thread (recall's helper thread,
memoryhub.read_beside; the usage writer; a live server's), each statement judged from the stack of the
thread that sent it. Eager tasks run in the test's thread; a real Celery worker (tests/worker.py) runs
the check in its own process (tests/routed_worker.py) and its findings count for the test that started it.

A statement that pins a bank must also pin each bank table in it (unpinned_tables): every reference's
``bank_id`` (by its alias or table name) equal to a value or to another table's ``bank_id``, or a bare
``bank_id`` pin in its own sub-select. A join pinned on one side only reads every partition of the
other side on a partitioned install, and under Citus is no co-located join.

The check reads the statement's text, not a parse tree. It is a net for the common mistakes (a lookup
by surrogate ``id`` alone, a ``pk__in`` over several banks, a join or sub-select that names the bank on
one side only), not a proof.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.prepared_texts import prepared_body

MODE_VARIABLE = "MEMORYHUB_BANK_ROUTING"
ROOT = Path(__file__).resolve().parent.parent
PROJECT_DIRS = ("banks", "curation", "portability", "agents", "memoryhub", "config")
ADMIN = "django.contrib.admin"  # frames of Django's admin (outside the project) name this entry
THIS_FILE = "tests/bank_routing.py"

# Tables that carry ``bank_id`` but are not distributed by it (docs/scaling.md says why):
# audit events and jobs outlive their bank (nullable bank, kept on the coordinator); memberships are
# read by user across banks (whose banks may this operator see); webhook sources are found by their
# own id in the URL before any bank is known.
COORDINATOR_TABLES = frozenset({"banks_auditevent", "banks_job", "banks_bankmembership", "banks_webhooksource"})

# (file under the project, or a folder ending in "/", function or "*", reason): statements sent from
# there may span banks.
ALLOW_LIST: tuple[tuple[str, str, str], ...] = (
    (ADMIN, "*", "cross-bank admin views: Django's admin lists and opens the rows of every bank its user "
                 "may see (a superuser's: all), by id from its URLs"),
    ("banks/admin/", "*", "the admin's own pages and actions (see above)"),
    ("banks/migrations/", "*", "migrations: backfills walk every bank's rows, a chunk at a time"),
    ("banks/selectors/bank_health.py", "*", "cross-bank admin view: the health of every bank"),
    ("banks/selectors/stats.py", "*", "cross-bank admin view: counts over every bank"),
    ("banks/api/views_admin.py", "*", "cross-bank admin API: the list of banks with their counts"),
    ("banks/selectors/tenant_storage.py", "*", "a tenant's storage is summed over its banks"),
    ("banks/services/dsar.py", "*", "a tenant's erasure spans the tenant's banks, each checked for admin"),
    ("banks/services/lifecycle.py", "*", "maintenance: the lifecycle pass walks every bank's expired rows"),
    ("banks/services/vector_indexes.py", "bank_vector_indexes_grow",
     "maintenance: finds the banks grown past the own-index threshold, over all banks"),
    ("banks/vectors.py", "estimated_rows",
     "an EXPLAIN for the planner's estimate of the shared graph's size: no row is read"),
    ("portability/tasks.py", "sweep_jobs", "maintenance: the periodic job sweep looks at every bank's jobs"),
    ("banks/services/tag_indexes.py", "bank_tag_indexes_refresh_all",
     "maintenance: the periodic pass finds the banks whose big tags need an index, over all banks"),
    ("banks/services/text_statistics.py", "bank_lexemes_refresh_all",
     "maintenance: the periodic pass finds the banks big enough to keep word statistics, over all banks"),
    ("banks/services/time_repair.py", "*", "maintenance: the install's time check and repair look at every bank"),
    ("banks/services/memory_rows/upkeep.py", "rows_times_repair",
     "maintenance: the time repair rewrites out-of-range times in every bank"),
    ("banks/services/access_log.py", "access_log_prune",
     "maintenance: the periodic prune drops every bank's accesses past the retention, over all banks"),
    ("banks/services/memory_rows/move.py", "*",
     "moving memories to another bank touches two banks by nature (each statement names both); under Citus "
     "a move becomes a copy into the target's shard and a delete from the source's"),
)


@dataclass
class Finding:
    where: str
    shape: str
    tests: set[str] = field(default_factory=set)


@dataclass
class RoutingCheck:
    strict: bool
    tables: frozenset[str]
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)
    allowed: dict[str, int] = field(default_factory=dict)
    current_test: str = ""
    failures: list[str] = field(default_factory=list)
    active: bool = False
    log: Path | None = None  # a real worker's check writes its findings here, for the test run to read

    def note(self, sql: str, problem: str) -> None:
        """A statement that does not pin one bank, or a table of it that is not pinned (``problem``): let
        through (allow-list, the tests' own) or found."""
        allowed, sender = _stack()
        if allowed:
            self.allowed[allowed] = self.allowed.get(allowed, 0) + 1
            return
        if sender is None:  # the tests' own looks at the database are not checked
            return
        where = f"{sender[0]}:{sender[1]}"
        thread = threading.current_thread()
        if thread is not threading.main_thread():
            where += f" (thread {thread.name})"
        if self.log is not None:
            with self.log.open("a") as log:
                log.write(f"{where} (Celery worker)\t{problem}{shape(sql)}\n")
            return
        self.found(where, problem + shape(sql))

    def found(self, where: str, text: str) -> None:
        key = (where, text)
        finding = self.findings.setdefault(key, Finding(where, text))
        finding.tests.add(self.current_test)
        if self.strict:
            self.failures.append(f"{where}: {text}")


_TABLE = re.compile(r'"?\b(banks_[a-z_]+|portability_[a-z_]+)\b"?')
_PIN = re.compile(r'"?bank_id"?\s*(=\s*(%s|%\([a-z_]+\)s|\$\d+|\d+|\'[^\']*\'|"?[a-z_]+"?\."?bank_id\b)'
                  r'|IN\s*\(\s*(%s|\d+)\s*\))', re.IGNORECASE)
_INSERT = re.compile(r'^\s*INSERT\s+INTO\s+"?([a-z_]+)"?\s*\(([^)]*)\)', re.IGNORECASE)
_LITERALS = re.compile(r"'(?:[^']|'')*'|\b\d+\b")
_SELECT_LIST = re.compile(r"^SELECT .*? FROM", re.IGNORECASE)
_SKIP = re.compile(r"^\s*(SAVEPOINT|RELEASE|ROLLBACK|BEGIN|COMMIT|SET|SHOW|LOCK|CREATE|DROP|ALTER|ANALYZE|VACUUM"
                   r"|SELECT\s+pg_|SELECT\s+set_config|TRUNCATE|COPY)\b", re.IGNORECASE)


def bank_tables() -> frozenset[str]:
    from django.apps import apps

    from banks.models import Bank

    return frozenset(
        model._meta.db_table for model in apps.get_models()
        if any(f.is_relation and f.related_model is Bank for f in model._meta.concrete_fields)
    ) - COORDINATOR_TABLES


def pins_one_bank(sql: str, tables: frozenset[str]) -> bool:
    """Whether ``sql`` names no bank table, or pins one bank."""
    if _SKIP.match(sql):
        return True
    touched = {name for name in _TABLE.findall(sql) if name in tables}
    if not touched:
        return True
    insert = _INSERT.match(sql)
    if insert and insert.group(1) in tables and "bank_id" in insert.group(2):
        return True
    return bool(_PIN.search(sql))


# A reference to a table in a statement: after FROM, JOIN, UPDATE or USING, with its alias if it has one.
_REFERENCE = re.compile(r'\b(?:FROM|JOIN|UPDATE|USING)\s+"?([a-z_]+)"?(?:\s+(?:AS\s+)?"?([A-Za-z_][A-Za-z0-9_]*)"?)?',
                        re.IGNORECASE)
_NOT_ALIASES = frozenset({
    "on", "where", "inner", "left", "right", "full", "cross", "join", "group", "order", "limit", "offset", "using",
    "set", "for", "union", "except", "intersect", "window", "having", "returning", "natural", "lateral", "with",
    "values", "default", "only", "tablesample", "as", "and", "or", "not", "select"})
_VALUE = r'(?:%s|%\([a-z_]+\)s|\$\d+|\d+|\'[^\']*\')'
_BARE_PIN = re.compile(r'(?<![\w."])"?bank_id"?\s*(?:=\s*' + _VALUE + r'|IN\s*\(\s*(?:%s|\d+)\s*\))', re.IGNORECASE)


def _qualified_pin(name: str) -> re.Pattern[str]:
    """``name.bank_id`` equal to a value or to another table's ``bank_id``, on either side."""
    column = rf'"?\b{re.escape(name)}"?\."?bank_id"?'
    other = r'"?[A-Za-z_][A-Za-z0-9_]*"?\."?bank_id\b"?'
    return re.compile(rf'{column}\s*(?:=\s*(?:{_VALUE}|{other})|IN\s*\(\s*(?:%s|\d+)\s*\))|{other}\s*=\s*{column}',
                      re.IGNORECASE)


def _scope(sql: str, at: int) -> str:
    """The text of the sub-select (or the statement) that holds position ``at``, its own sub-selects
    blanked out: where an unqualified ``bank_id`` beside that reference must be."""
    start, depth = 0, 0
    for i in range(at - 1, -1, -1):  # the innermost "(SELECT" or "(WITH" open at ``at``
        if sql[i] == ")":
            depth += 1
        elif sql[i] == "(":
            if depth == 0 and re.match(r"\(\s*(SELECT|WITH)\b", sql[i:], re.IGNORECASE):
                start = i + 1
                break
            depth = max(depth - 1, 0)
    depth = 0
    out: list[str] = []
    i = start
    while i < len(sql):
        char = sql[i]
        if char == "(":
            if re.match(r"\(\s*(SELECT|WITH)\b", sql[i:], re.IGNORECASE):  # blank a nested sub-select
                inner, j = 1, i + 1
                while j < len(sql) and inner:
                    inner += {"(": 1, ")": -1}.get(sql[j], 0)
                    j += 1
                out.append(" ")
                i = j
                continue
            depth += 1
        elif char == ")":
            if depth == 0 and start:  # the sub-select's own closing parenthesis
                break
            depth -= 1
        out.append(char)
        i += 1
    return "".join(out)


def unpinned_tables(sql: str, tables: frozenset[str]) -> list[str]:
    """The bank tables of ``sql`` whose own rows are not pinned to a bank: each reference needs its
    ``bank_id`` (by its alias or table name) equal to a value or to a pinned table's, or a bare
    ``bank_id`` pin in its own sub-select. A join pinned on one side only passes pins_one_bank, yet
    reads every partition of the other side (and under Citus is no co-located join: docs/scaling.md,
    "Keys that lead with the bank")."""
    if _SKIP.match(sql):
        return []
    unpinned: list[str] = []
    for reference in _REFERENCE.finditer(sql):
        table, alias = reference.group(1), reference.group(2)
        if table not in tables:
            continue
        name = alias if alias and alias.lower() not in _NOT_ALIASES else table
        if _qualified_pin(name).search(sql) or _BARE_PIN.search(_scope(sql, reference.start())):
            continue
        unpinned.append(table)
    return unpinned


def shape(sql: str) -> str:
    """The statement without its values or its select list (which the ORM spells column by column)."""
    text = " ".join(_LITERALS.sub("?", sql).split())
    return _SELECT_LIST.sub("SELECT … FROM", text, count=1)[:300]


def routing_problem(sql: str, tables: frozenset[str]) -> str:
    """What is wrong with ``sql``'s routing, as a prefix of its finding: "" when nothing is."""
    if not pins_one_bank(sql, tables):
        return ""  # the statement as a whole: its shape says it
    unpinned = unpinned_tables(sql, tables)
    return f"[{', '.join(sorted(set(unpinned)))} not pinned] " if unpinned else ""


# The verdict on each statement text, and each code file's path under the project: the ORM sends the
# same few hundred texts over and over, so the check costs a dictionary look-up per statement, and a
# walk of the stack's code objects (no source lines read) only for the statements that need one.
_VERDICTS: dict[str, str | None] = {}  # None: routed; else the problem (routing_problem, "" for the whole)
_RELATIVE: dict[str, str | None] = {}
_ALLOWED_BY_FILE: dict[str, dict[str, str]] = {}
_ALLOWED_FOLDERS: tuple[str, ...] = tuple(f for f, _, _ in ALLOW_LIST if f.endswith("/"))
_ADMIN_FOLDER = f"{os.sep}django{os.sep}contrib{os.sep}admin{os.sep}"
for _file, _function, _reason in ALLOW_LIST:
    _ALLOWED_BY_FILE.setdefault(_file, {})[_function] = f"{_file}:{_function}"


def _relative(filename: str) -> str | None:
    try:
        return _RELATIVE[filename]
    except KeyError:
        pass
    try:
        relative: str | None = str(Path(filename).resolve().relative_to(ROOT))
    except ValueError:
        relative = None
    # Installed packages are not the project's, also when the virtualenv lies inside the checkout (as
    # `make test` makes it on a fresh clone): Django's admin must still be told by its folder.
    if relative is not None and "site-packages" in Path(relative).parts:
        relative = None
    _RELATIVE[filename] = relative
    return relative


def _stack() -> tuple[str | None, tuple[str, str] | None]:
    """The allow-list entry of any frame on the stack (or None), and the innermost project frame
    (file relative to the project, function) that sent the statement (or None: the tests' own, sent
    from a test's code, also when that code was called by the application, as a stand-in is)."""
    sender: tuple[str, str] | None = None
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        relative = _relative(code.co_filename)
        if relative is None and _ADMIN_FOLDER in code.co_filename:
            return f"{ADMIN}:*", sender
        if relative is not None and relative.startswith(_ALLOWED_FOLDERS):
            return f"{relative.rsplit('/', 1)[0]}/:*", sender
        if relative is not None and relative != THIS_FILE:
            if sender is None and relative.startswith("tests/"):
                return None, None
            entries = _ALLOWED_BY_FILE.get(relative)
            if entries is not None:
                hit = entries.get(code.co_name) or entries.get("*")
                if hit:
                    return hit, sender
            if sender is None and relative.split("/", 1)[0] in PROJECT_DIRS:
                sender = (relative, code.co_name)
        frame = frame.f_back  # type: ignore[assignment]
    return None, sender


def wrapper(check: RoutingCheck) -> Callable[..., Any]:
    def execute(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        if check.active and isinstance(sql, str):
            try:
                problem = _VERDICTS[sql]
            except KeyError:
                # A statement prepared by name (memoryhub.postgres.prepared) is judged by its body; its
                # EXECUTE names no table.
                body = prepared_body(sql)
                problem = None if (pins_one_bank(body, check.tables) and not unpinned_tables(body, check.tables)) \
                    else routing_problem(body, check.tables)
                if len(_VERDICTS) < 50_000:
                    _VERDICTS[sql] = problem
            if problem is not None:
                check.note(sql, problem)
        return execute(sql, params, many, context)

    return execute


def install(check: RoutingCheck) -> None:
    """Hook the check into every connection Django opens, in any thread, for the rest of the process.

    Django keeps a connection object per thread and alias: recall's helper thread
    (memoryhub.read_beside), the usage writer and a live server's threads each get their own, which a
    wrapper put on the test's thread's connections never sees. So each connection object gets the
    wrapper when it is made (and the ones this thread has already); the wrapper checks only while a
    test runs (``check.active``), from the thread that sent the statement (its own stack)."""
    from django.db import connections

    hook = wrapper(check)
    made = connections.create_connection

    def create_connection(alias: str) -> Any:
        connection = made(alias)
        connection.execute_wrappers.append(hook)
        return connection

    connections.create_connection = create_connection  # type: ignore[method-assign]
    for connection in connections.all(initialized_only=True):
        if hook not in connection.execute_wrappers:
            connection.execute_wrappers.append(hook)


# A real Celery worker (tests/worker.py) is a process of its own: it runs the check on its connections
# (tests/routed_worker.py) and writes what it finds to a file named by this variable; each test's end
# reads the files of the workers started since, as if the test had sent those statements itself.
WORKER_LOG_VARIABLE = "MEMORYHUB_BANK_ROUTING_LOG"
_WORKER_LOGS: list[Path] = []


def worker_log(folder: Path) -> Path | None:
    """The findings file for a real worker about to start in ``folder`` (None: the check is off)."""
    if mode() not in ("report", "strict"):
        return None
    log = folder / f"bank-routing-{len(_WORKER_LOGS)}-{os.getpid()}.log"
    log.touch()
    _WORKER_LOGS.append(log)
    return log


def worker_install(log: str) -> None:
    """In a worker process: check every statement its tasks send, writing what does not pin a bank to ``log``."""
    install(RoutingCheck(strict=False, tables=bank_tables(), active=True, log=Path(log)))


def _worker_findings(check: RoutingCheck) -> None:
    while _WORKER_LOGS:
        log = _WORKER_LOGS.pop()
        lines = log.read_text().splitlines() if log.exists() else []
        for line in lines:
            where, _, text = line.partition("\t")
            check.found(where, text)


def mode() -> str:
    """``strict`` unless told otherwise: the suite (and CI, which runs it) fails on a statement that
    spans banks."""
    return os.environ.get(MODE_VARIABLE, "").strip().lower() or "strict"


@pytest.fixture(autouse=True)
def bank_routing_check(request: pytest.FixtureRequest) -> Iterator[None]:
    check: RoutingCheck | None = getattr(request.config, "_bank_routing", None)
    if check is None:
        yield
        return
    check.current_test = request.node.nodeid
    check.failures = []
    check.active = True
    try:
        yield
    finally:
        check.active = False
        _worker_findings(check)
    if check.failures:
        pytest.fail("statements not pinned to one bank:\n  " + "\n  ".join(sorted(set(check.failures))))


def configure(config: pytest.Config) -> None:
    wanted = mode()
    if wanted not in ("report", "strict"):
        return
    config._bank_routing = None  # type: ignore[attr-defined]  # set once Django is ready (session start)
    config._bank_routing_strict = wanted == "strict"  # type: ignore[attr-defined]


def session_start(session: pytest.Session) -> None:
    config = session.config
    if not hasattr(config, "_bank_routing_strict"):
        return
    import django

    django.setup()
    check = RoutingCheck(strict=config._bank_routing_strict, tables=bank_tables())
    install(check)
    config._bank_routing = check  # type: ignore[attr-defined]


def worker_finish(config: pytest.Config) -> None:
    """Under pytest-xdist, a worker hands what its check saw to the controller, which prints the summary."""
    check: RoutingCheck | None = getattr(config, "_bank_routing", None)
    output = getattr(config, "workeroutput", None)
    if check is None or output is None:
        return
    output["bank_routing"] = {
        "allowed": dict(check.allowed),
        "findings": [[f.where, f.shape, sorted(f.tests)] for f in check.findings.values()],
    }


def merge_worker(config: pytest.Config, worker_output: dict[str, Any]) -> None:
    """The controller's side of ``worker_finish``: one summary for the whole run."""
    check: RoutingCheck | None = getattr(config, "_bank_routing", None)
    seen = worker_output.get("bank_routing")
    if check is None or not seen:
        return
    for name, count in seen["allowed"].items():
        check.allowed[name] = check.allowed.get(name, 0) + count
    for where, text, tests in seen["findings"]:
        check.findings.setdefault((where, text), Finding(where, text)).tests.update(tests)


def summary(terminalreporter: Any, config: pytest.Config) -> None:
    check: RoutingCheck | None = getattr(config, "_bank_routing", None)
    if check is None:
        return
    write = terminalreporter.write_line
    terminalreporter.section("statements routed to one bank")
    write(f"bank-scoped tables: {', '.join(sorted(check.tables))}")
    write(f"coordinator tables (not checked): {', '.join(sorted(COORDINATOR_TABLES))}")
    write("allow-list (statements sent from here may span banks):")
    for file, function, reason in ALLOW_LIST:
        seen = check.allowed.get(f"{file}:{function}", 0)
        write(f"  {file}:{function} -- {reason} ({seen} statements in this run)")
    write(f"statements that do not pin one bank: {len(check.findings)} distinct")
    for finding in sorted(check.findings.values(), key=lambda f: (f.where, f.shape)):
        write(f"  {finding.where} ({len(finding.tests)} tests): {finding.shape}")
