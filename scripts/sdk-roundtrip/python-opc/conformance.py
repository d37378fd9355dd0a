"""Client side of the conformance kit through the client openapi-python-client generated.

Run by scripts/check-sdks in the client's own virtualenv, the way smithy-rs runs its protocol
tests: every case whose `appliesTo` holds "client", of kind `request` or `response`, goes
through the generated API with a captured transport (httpx.MockTransport) instead of a
network (conformance/README.md says what each case means).

  request   the case's params (wire JSON) become the SDK's input types (bodies through the
            generated Model.from_dict, so a `format: date` becomes a datetime.date; enums
            become their Enum), `sync_detailed` is called, and the httpx.Request it sends is
            compared with the case's wire request;
  response  the operation is called with the params of its first request case, the transport
            answers the canned response, and what the SDK surfaces is compared with `expect`:
            a value through the parsed model's to_dict(); an error as the Response's
            status_code and its parsed Problem's `code` (openapi-python-client raises nothing
            for a documented status: the error comes back as the operation's Problem model).

How a surfaced model is read: the typed result is the properties the document declares.
openapi-python-client keeps the members a response object does not declare in the model's
`additional_properties` (tolerating them, as the document asks) and to_dict() writes them
back; for a model that declares properties they are left out of the comparison. A schema
that declares none (a free-form `type: object`) is its additional_properties, compared
whole. A date-time is compared as an instant (to_dict() writes Python's isoformat,
`...52.437000+00:00`, for the wire's `...52.437Z`).

Usage: python conformance.py KIT_DIR [-v]   (or $WPDS_CONFORMANCE_KIT)
  KIT_DIR  the kit: a directory holding index.json and cases/ (the repository's conformance/,
           or a copy of a server's /conformance/)
  -v       also print each expected failure's difference
Exit 0: every case passed or failed as EXPECT_FAIL says; 1: a case failed unexpectedly, an
expected failure passed, or EXPECT_FAIL names a case the kit does not hold; 2: bad usage or a
kit the harness cannot read.
"""

import copy
import datetime
import enum
import importlib
import inspect
import json
import os
import pkgutil
import re
import sys
import types
import typing
from urllib.parse import parse_qsl

import attrs
import httpx

PACKAGE = "workspace_project_data_service_client"
NAME = "python-opc conformance"
BASE_URL = "http://conformance.invalid"

# Cases this generator cannot pass: case id -> what the SDK does instead. A case on this list
# that passes fails the run (so the list cannot rot), as does an id the kit does not hold.
# (None in 1.0.0. `CreditResetResult` declares no properties, so openapi-python-client's model
# of it is nothing but additional_properties and to_dict() surfaces `memberAddedLater`: the
# kit's rule for undeclared members, `without_undeclared`, removes it, as it should.)
EXPECT_FAIL = {}


class Usage(Exception):
    pass


# ---- the kit --------------------------------------------------------------------------------


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Usage(f"cannot read {path}: {e}") from None


def load_kit(kit):
    if not os.path.isdir(kit):
        raise Usage(f"{kit}: not a directory")
    index = os.path.join(kit, "index.json")
    if os.path.exists(index):
        files = [f for f in read_json(index).get("files", []) if re.fullmatch(r"cases/[^/]+\.json", f)]
    else:
        files = [f"cases/{f}" for f in os.listdir(os.path.join(kit, "cases")) if f.endswith(".json")]
    if not files:
        raise Usage(f"{kit}: the kit holds no case file")
    cases, seen = [], set()
    for f in sorted(files):
        doc = read_json(os.path.join(kit, f))
        if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
            raise Usage(f'{f}: not {{"cases": [...]}}')
        for i, c in enumerate(doc["cases"]):
            if not isinstance(c, dict) or not all(k in c for k in ("id", "operationId", "kind", "appliesTo")):
                raise Usage(f"{f}: /cases/{i} is not a case")
            if c["id"] in seen:
                raise Usage(f"{f}: case id {c['id']} is not unique")
            seen.add(c["id"])
            cases.append(c)
    return cases


def client_case(c):
    return "client" in c["appliesTo"] and c["kind"] in ("request", "response")


# ---- openapi-python-client's naming rules -------------------------------------------------


def snake(name):
    """openapi-python-client's snake_case: words at capitals and delimiters, joined by _."""
    if any(ch.isupper() for ch in name):
        name = " ".join(re.split("([A-Z]?[a-z]+)", name))
    return "_".join(re.findall(r"[^ _\-.]+", name)).lower()


def api_modules():
    """Every generated operation module: {module name: module}. Each operation is the module
    {package}.api.{snake(tag)}.{snake(operationId)}, so snake(operationId) names it alone."""
    api = importlib.import_module(f"{PACKAGE}.api")
    found = {}
    for info in pkgutil.walk_packages(api.__path__, f"{PACKAGE}.api."):
        if not info.ispkg:
            leaf = info.name.rsplit(".", 1)[1]
            if leaf in found:
                raise Usage(f"two operation modules are named {leaf}")
            found[leaf] = importlib.import_module(info.name)
    return found


def from_wire(hint, value, what):
    """A wire-JSON value as the type openapi-python-client declares for it: an Enum by its
    value, a model through from_dict, a date or date-time parsed, a list item by item."""
    unset = importlib.import_module(f"{PACKAGE}.types").Unset
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    members = [t for t in (typing.get_args(hint) if union else (hint,)) if t is not unset]
    if value is None and type(None) in members:
        return None
    for t in members:
        origin = typing.get_origin(t)
        if origin is list and isinstance(value, list):
            item = (typing.get_args(t) or (typing.Any,))[0]
            return [from_wire(item, v, what) for v in value]
        if (origin is dict and isinstance(value, dict)) or t is typing.Any:
            return value
        if not isinstance(t, type) or t is type(None):
            continue
        if issubclass(t, enum.Enum):
            return t(value)
        if hasattr(t, "from_dict") and isinstance(value, dict):
            return t.from_dict(value)
        if issubclass(t, datetime.datetime) and isinstance(value, str):
            return datetime.datetime.fromisoformat(value)
        if issubclass(t, datetime.date) and isinstance(value, str):
            return datetime.date.fromisoformat(value)
        # a bool is not an int here, an int is a float
        if (isinstance(value, t) and (t is bool) == isinstance(value, bool)) or (t is float and type(value) is int):
            return value
    raise Usage(f"{what}: no rule turns {value!r} into {hint}")


class Binding:
    """How one operation is called: sync_detailed(**inputs, client=...) of its module, where
    every path, query and header parameter is the keyword snake(its name) and the JSON body is
    `body`, each of the type the function's annotations name."""

    def __init__(self, modules, operation_id):
        module = modules.get(snake(operation_id))
        if module is None:
            raise Usage(f"{operation_id}: no module {snake(operation_id)} under {PACKAGE}.api")
        self.function = module.sync_detailed
        self.hints = typing.get_type_hints(self.function)
        self.names = set(inspect.signature(self.function).parameters)

    def inputs(self, case):
        out = {}
        for where in ("path", "query", "header"):
            for name, value in case.get("params", {}).get(where, {}).items():
                key = snake(name)
                if key not in self.names:
                    raise Usage(f"{case['id']}: sync_detailed takes no {key} (the {where} parameter {name})")
                out[key] = from_wire(self.hints[key], value, f"{case['id']} {where} {name}")
        if "body" in case.get("params", {}):
            if "body" not in self.names:
                raise Usage(f"{case['id']}: a body for an operation without one")
            out["body"] = from_wire(self.hints["body"], case["params"]["body"], f"{case['id']} body")
        return out

    def call(self, auth, inputs, handler):
        client_module = importlib.import_module(f"{PACKAGE}.client")
        options = {
            "base_url": BASE_URL,
            "raise_on_unexpected_status": True,
            "httpx_args": {"transport": httpx.MockTransport(handler)},
        }
        token = token_for(auth)
        if token is None:
            client = client_module.Client(**options)
        else:
            client = client_module.AuthenticatedClient(token=token, **options)
        with client:
            return self.function(**inputs, client=client)


def token_for(auth):
    return None if auth in (None, "none") else f"{auth}-token"


# ---- comparing ------------------------------------------------------------------------------

DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def difference(expected, actual, pointer="", instants=False):
    """The first difference between two JSON values, or None."""
    at = pointer or "/"

    def show(v):
        return "nothing" if v is _MISSING else json.dumps(v)

    if instants and isinstance(expected, str) and isinstance(actual, str) \
            and DATE_TIME.fullmatch(expected) and DATE_TIME.fullmatch(actual):
        same = datetime.datetime.fromisoformat(expected) == datetime.datetime.fromisoformat(actual)
        return None if same else f"{at}: expected {show(expected)}, got {show(actual)}"
    if isinstance(expected, list) and isinstance(actual, list):
        for i in range(max(len(expected), len(actual))):
            d = difference(expected[i] if i < len(expected) else _MISSING,
                           actual[i] if i < len(actual) else _MISSING, f"{pointer}/{i}", instants)
            if d:
                return d
        return None
    if isinstance(expected, dict) and isinstance(actual, dict):
        for k in list(expected) + [k for k in actual if k not in expected]:
            d = difference(expected.get(k, _MISSING), actual.get(k, _MISSING),
                           f"{pointer}/{k.replace('~', '~0').replace('/', '~1')}", instants)
            if d:
                return d
        return None
    # JSON equality: a bool is not a number, 1 and 1.0 are the same number.
    same = type(expected) is type(actual) or (
        isinstance(expected, (int, float)) and isinstance(actual, (int, float))
        and not isinstance(expected, bool) and not isinstance(actual, bool))
    return None if same and expected == actual else f"{at}: expected {show(expected)}, got {show(actual)}"


_MISSING = object()


def without_undeclared(surfaced, pointers):
    """`surfaced` without the members the document does not declare, by the kit's rule (its
    README, "response"): each of the case's `undeclared` pointers is removed, wherever the
    SDK kept it, so an SDK that passes an unknown member through passes as one that drops it
    does. Any other member stays, and fails the case."""
    copy_ = copy.deepcopy(surfaced)
    for pointer in pointers:
        path = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
        at = copy_
        for token in path[:-1]:
            at = at.get(token) if isinstance(at, dict) else at[int(token)] if isinstance(at, list) else None
        if isinstance(at, dict):
            at.pop(path[-1], None)
    return copy_


def typed_json(value):
    """The surfaced value as JSON: to_dict() of the model without the members it keeps aside."""
    if not attrs.has(type(value)):
        return value
    value = copy.deepcopy(value)

    def drop_undeclared(node):
        if attrs.has(type(node)):
            declared = [f.name for f in attrs.fields(type(node)) if f.name != "additional_properties"]
            if declared and hasattr(node, "additional_properties"):
                node.additional_properties = {}
            for name in declared:
                drop_undeclared(getattr(node, name))
        elif isinstance(node, (list, tuple)):
            for item in node:
                drop_undeclared(item)

    drop_undeclared(value)
    return value.to_dict()


def check_request(want, sent, token):
    if sent.method != want["method"]:
        return f"method: expected {want['method']}, sent {sent.method}"
    raw = sent.url.raw_path.decode("ascii")
    path, _, query_string = raw.partition("?")
    if path != want["path"]:
        return f"path: expected {want['path']}, sent {path}"
    query = {}
    for k, v in parse_qsl(query_string, keep_blank_values=True):
        if k in query:
            return f"query: {k} sent more than once"
        query[k] = v
    d = difference(want.get("query", {}), query)
    if d:
        return f"query {d}"
    for name, value in want.get("headers", {}).items():
        got = sent.headers.get(name)
        if got != value:
            return f"header {name}: expected {json.dumps(value)}, sent {json.dumps(got)}"
    for name in want.get("requireHeaders", []):
        got = sent.headers.get(name)
        if got is None:
            return f"header {name}: required, not sent"
        if name.lower() == "authorization" and token is not None and got != f"Bearer {token}":
            return f'header Authorization: expected "Bearer {token}", sent {json.dumps(got)}'
    for name in want.get("forbidHeaders", []):
        if name in sent.headers:
            return f"header {name}: forbidden, sent {json.dumps(sent.headers[name])}"
    if "bodyMediaType" in want:
        media = sent.headers.get("content-type", "").split(";")[0].strip().lower() or None
        if media != want["bodyMediaType"].lower():
            return f"body media type: expected {want['bodyMediaType']}, sent {json.dumps(media)}"
    content = sent.content
    if "body" not in want:
        return None if not content else f"body: expected none, sent {content!r}"
    if not content:
        return "body: expected one, sent none"
    try:
        body = json.loads(content)
    except ValueError:
        return f"body: not JSON: {content!r}"
    d = difference(want["body"], body)
    return f"body {d}" if d else None


# ---- running a case -------------------------------------------------------------------------


def run_case(case, binding, first):
    sent = []
    errors = importlib.import_module(f"{PACKAGE}.errors")
    if case["kind"] == "request":
        def record(request):
            request.read()
            sent.append(request)
            return httpx.Response(204)

        try:
            binding.call(case.get("auth"), binding.inputs(case), record)
        except errors.UnexpectedStatus:
            pass  # the 204 the transport answers is not this case's concern
        if len(sent) != 1:
            return f"the SDK sent {len(sent)} requests"
        return check_request(case["request"], sent[0], token_for(case.get("auth")))

    source = first.get(case["operationId"])
    if source is None:
        return f"no request case of {case['operationId']} to take params from"
    canned = case["response"]

    def answer(request):
        sent.append(request)
        value = canned.get("body", {}).get("value", _MISSING)
        content = b"" if value is _MISSING or canned["status"] in (204, 205, 304) else json.dumps(value).encode()
        return httpx.Response(canned["status"], headers=canned.get("headers", {}), content=content)

    try:
        res = binding.call(source.get("auth"), binding.inputs(source), answer)
    except errors.UnexpectedStatus as e:
        return f"the SDK raised UnexpectedStatus {e.status_code} (the status is not documented for it)"
    expect = case["expect"]
    if "error" in expect:
        want = expect["error"]
        if res.status_code != want["status"]:
            return f"error status: expected {want['status']}, surfaced {int(res.status_code)}"
        if 200 <= res.status_code < 300:
            return f"expected an error, the SDK surfaced a success {int(res.status_code)}"
        if "code" in want:
            code = getattr(res.parsed, "code", _MISSING)
            if code is _MISSING:
                return f"error code: the SDK surfaced {type(res.parsed).__name__}, which has no code"
            if code != want["code"]:
                return f"error code: expected {json.dumps(want['code'])}, surfaced {json.dumps(code)}"
        return None
    if not 200 <= res.status_code < 300:
        return f"expected a value, the SDK surfaced status {int(res.status_code)}"
    if res.parsed is None:
        return "expected a value, the SDK surfaced none"
    surfaced = without_undeclared(typed_json(res.parsed), case.get("undeclared", []))
    d = difference(expect["value"], surfaced, "", True)
    return f"value {d}" if d else None


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    kit = args[0] if args else os.environ.get("WPDS_CONFORMANCE_KIT")
    if not kit or len(args) > 1:
        raise Usage("usage: python conformance.py KIT_DIR [-v]")
    cases = [c for c in load_kit(kit) if client_case(c)]

    problems = []
    ids = {c["id"] for c in cases}
    for case_id in EXPECT_FAIL:
        if case_id not in ids:
            problems.append(f"EXPECT_FAIL names {case_id}, which is not a client request or response case of the kit")
    first = {}
    for c in cases:
        if c["kind"] == "request":
            first.setdefault(c["operationId"], c)
    modules = api_modules()
    bindings = {}
    for c in cases:
        if c["operationId"] not in bindings:
            bindings[c["operationId"]] = Binding(modules, c["operationId"])

    passed = expected = 0
    for c in cases:
        try:
            diff = run_case(c, bindings[c["operationId"]], first)
        except Usage:
            raise
        except Exception as e:  # noqa: BLE001 (an exception inside the SDK is the case's failure)
            diff = f"the SDK raised {type(e).__name__}: {e}"
        reason = EXPECT_FAIL.get(c["id"])
        if diff is None and reason is None:
            passed += 1
        elif diff is None:
            problems.append(f"{c['id']}: on EXPECT_FAIL but passes now; take it off the list")
        elif reason is None:
            problems.append(f"{c['id']}: {diff}")
        else:
            expected += 1
            if verbose:
                print(f"  expected failure {c['id']}: {diff}")
    print(f"{NAME}: {len(cases)} cases, {passed} passed, {expected} expected failures, {len(problems)} problems")
    for p in problems:
        print(f"  FAIL {p}")
    return 0 if not problems else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Usage as e:
        print(f"{NAME}: {e}", file=sys.stderr)
        sys.exit(2)
