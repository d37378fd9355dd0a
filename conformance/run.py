#!/usr/bin/env python3
"""The conformance kit's runner: sends every server-applicable case of the kit to a server and
compares each answer with the case's expected response (see README.md, "Running the kit
against a server").

    python3 run.py --base-url http://localhost:8080 \\
        --member-token "$MEMBER_TOKEN" --admin-token "$ADMIN_TOKEN" \\
        --outsider-token "$OUTSIDER_TOKEN" --refresh-token "$REFRESH_TOKEN"

The kit is read from the directory this file is in when it holds index.json, else from the
server (`/conformance/index.json` and the files it lists); `--kit DIR_OR_URL` names another.
Needs Python 3.9+ and `jsonschema` (pip install jsonschema): every case file is checked
against case.schema.json before anything is sent, and a kit that fails the schema, names an
operation the document does not have, repeats an id or refers to an unknown case stops the
run (exit 2) with nothing sent: a broken kit never passes in part.

With `--mock`, the server is a mock of the document (Prism's `prism mock`): the runner sends
every request case that names the document's example of its answer, asking for that example
with `Prefer: example=…`, and checks the answer's status, media type and body by the case's
rule; the other cases test what a mock does not do (README.md, "What a mock cannot check").

A case's `given` steps run first, each once per run: another case's id (run as that case,
and it must pass), or an inline request (its `status`, when given, must be answered).

Exit status: 0 every selected case passed, 1 a case failed, 2 the kit or the arguments are
unusable.
"""

import argparse
import base64
import http.client
import json
import re
import sys
import urllib.parse
import urllib.request
from pathlib import Path

INVALID_TOKEN = "conformance-kit-token-that-no-server-issued"
# Stands for a refresh token in a case that is refused before the token is read.
UNSPENT = "conformance-kit-refresh-token"


class KitError(Exception):
    """The kit or the arguments are unusable: nothing is run."""


# --- loading and checking the kit ----------------------------------------------------------


def read(source, name):
    """The text of the kit's file `name`, from a directory or a base URL."""
    if re.match(r"https?://", source):
        url = urllib.parse.urljoin(source.rstrip("/") + "/", name)
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                return answer.read().decode("utf-8")
        except OSError as error:
            raise KitError(f"{url}: {error}") from error
    path = Path(source) / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise KitError(f"{path}: {error}") from error


def parse(text, where):
    try:
        return json.loads(text)
    except ValueError as error:
        raise KitError(f"{where}: not JSON: {error}") from error


def load_document(where):
    """The OpenAPI document, from a URL or a file (JSON, or YAML with PyYAML installed)."""
    source, name = (where.rsplit("/", 1) if re.match(r"https?://", where) else (str(Path(where).parent), Path(where).name))
    text = read(source, name)
    if name.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError as error:
            raise KitError("a YAML document needs PyYAML: pip install pyyaml, or pass the JSON") from error
        return yaml.safe_load(text)
    return parse(text, where)


def load_kit(source, document):
    """The kit's cases, checked: (cases in file order, {id: case})."""
    try:
        import jsonschema
    except ImportError as error:
        raise KitError("the runner needs jsonschema: pip install jsonschema") from error
    index = parse(read(source, "index.json"), f"{source}/index.json")
    schema = parse(read(source, index.get("caseSchema", "case.schema.json")), "case.schema.json")
    validator = jsonschema.Draft202012Validator(schema)
    operations = {
        op["operationId"]
        for item in document.get("paths", {}).values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }
    cases, by_id, problems = [], {}, []
    for name in index.get("files", []):
        if not (name.startswith("cases/") and name.endswith(".json")):
            continue
        data = parse(read(source, name), name)
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        for error in errors[:20]:
            pointer = "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in error.absolute_path)
            problems.append(f"{name}#{pointer or '/'}: {error.message}")
        if errors:
            continue
        for position, case in enumerate(data["cases"]):
            where = f"{name}#/cases/{position}"
            if case["operationId"] not in operations:
                problems.append(f"{where}: operationId {case['operationId']!r} is not in the document")
            if case["id"] in by_id:
                problems.append(f"{where}: id {case['id']!r} is used twice")
            by_id[case["id"]] = case
            cases.append((where, case))
    for where, case in cases:
        for step in case.get("given", []):
            if isinstance(step, str) and step not in by_id:
                problems.append(f"{where}: given names {step!r}, which no case of the kit has")
    if problems:
        raise KitError("the kit is unusable, nothing was run:\n  " + "\n  ".join(problems))
    return [case for _, case in cases], by_id


# --- sending a request ---------------------------------------------------------------------


def substitute(value, refresh_token):
    if isinstance(value, str):
        return value.replace("${refreshToken}", refresh_token)
    if isinstance(value, list):
        return [substitute(v, refresh_token) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, refresh_token) for k, v in value.items()}
    return value


def raw_body(spec):
    if "base64" in spec:
        return base64.b64decode(spec["base64"])
    return (spec["repeat"] * (spec["bytes"] // len(spec["repeat"]) + 1)).encode("utf-8")[: spec["bytes"]]


class Server:
    def __init__(self, base_url, tokens, refresh_token, timeout):
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https"):
            raise KitError(f"--base-url {base_url!r} is not an http(s) URL")
        self.url, self.tokens, self.refresh_token, self.timeout = url, tokens, refresh_token, timeout

    def send(self, case_request, auth, extra_headers=None):
        request = substitute(case_request, self.refresh_token)
        headers = {"Accept": "application/json, application/problem+json", **request.get("headers", {}), **(extra_headers or {})}
        token = self.tokens.get(auth)
        if auth == "invalid":
            token = INVALID_TOKEN
        if auth not in ("none", None):
            if not token:
                raise KitError(f"a case needs the {auth} token: pass --{auth}-token")
            headers["Authorization"] = f"Bearer {token}"
        body = None
        if "body" in request:
            body = json.dumps(request["body"]).encode("utf-8")
        elif "rawBody" in request:
            body = raw_body(request["rawBody"])
        target = self.url.path.rstrip("/") + request["path"]
        if request.get("query"):
            target += "?" + urllib.parse.urlencode(request["query"])
        connection_class = http.client.HTTPSConnection if self.url.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(self.url.netloc, timeout=self.timeout)
        try:
            connection.request(request["method"], target, body=body, headers=headers)
            answer = connection.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        except (OSError, http.client.HTTPException) as error:
            # A server may answer a body it refuses (413) before reading all of it, and close.
            return None, {}, str(error).encode()
        finally:
            connection.close()


# --- comparing an answer ------------------------------------------------------------------


def ignored(pointer, ignore):
    return pointer in ignore


def exact(expected, actual, pointer, ignore):
    if ignored(pointer, ignore):
        return None
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            child = f"{pointer}/{key}"
            if ignored(child, ignore):
                continue
            if key not in actual:
                return f"{child}: missing"
            if key not in expected:
                return f"{child}: not expected"
            found = exact(expected[key], actual[key], child, ignore)
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"{pointer or '/'}: {len(actual)} items, expected {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = exact(e, a, f"{pointer}/{i}", ignore)
            if found:
                return found
        return None
    if expected != actual or type(expected) is not type(actual):
        return f"{pointer or '/'}: {json.dumps(actual)[:200]}, expected {json.dumps(expected)[:200]}"
    return None


def subset(expected, actual, pointer, ignore):
    """Every member of `expected` is in `actual` with a matching value; an expected array's
    items each match a different item of the actual array, in any order."""
    if ignored(pointer, ignore):
        return None
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{pointer or '/'}: not an object"
        for key, value in expected.items():
            if key not in actual:
                return f"{pointer}/{key}: missing"
            found = subset(value, actual[key], f"{pointer}/{key}", ignore)
            if found:
                return found
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{pointer or '/'}: not an array"
        unused = list(range(len(actual)))
        for i, item in enumerate(expected):
            match = next((j for j in unused if subset(item, actual[j], f"{pointer}/{j}", ignore) is None), None)
            if match is None:
                return f"{pointer or '/'}: no item matches {json.dumps(item)[:300]} (got {json.dumps(actual)[:500]})"
            unused.remove(match)
        return None
    return exact(expected, actual, pointer, ignore)


def check(case, status, headers, raw, document):
    """The first difference between the answer and the case's `response`, or None."""
    expected = case["response"]
    if status is None:
        return f"no answer: {raw.decode(errors='replace')}"
    if status != expected["status"]:
        return f"status {status}, expected {expected['status']}: {raw[:300].decode(errors='replace')}"
    for name, value in expected.get("headers", {}).items():
        actual = headers.get(name.lower())
        if actual is None:
            return f"header {name}: missing"
        if name.lower() == "content-type":
            actual = actual.split(";")[0].strip()
        if actual != value:
            return f"header {name}: {actual!r}, expected {value!r}"
    for name in expected.get("requireHeaders", []):
        if name.lower() not in headers:
            return f"header {name}: missing"
    body = expected.get("body")
    if body is None and "code" not in expected:
        return None
    try:
        actual = json.loads(raw) if raw else None
    except ValueError:
        return f"body is not JSON: {raw[:200]!r}"
    if "code" in expected and (not isinstance(actual, dict) or actual.get("code") != expected["code"]):
        return f"problem code {actual.get('code') if isinstance(actual, dict) else None!r}, expected {expected['code']!r}"
    if body is None:
        return None
    ignore = set(body.get("ignore", []))
    if body["match"] == "exact":
        return exact(body["value"], actual, "", ignore)
    if body["match"] == "subset":
        return subset(body["value"], actual, "", ignore)
    import jsonschema

    schema = {"$ref": body["schema"], "components": document.get("components", {})}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(actual))
    return f"body breaks {body['schema']}: {errors[0].message}" if errors else None


# --- the run ----------------------------------------------------------------------------


def server_cases(cases, only, mock=False):
    if mock:
        chosen = [c for c in cases if c["kind"] == "request" and "example" in c.get("response", {})]
    else:
        chosen = [c for c in cases if "server" in c["appliesTo"] and "response" in c and c["kind"] != "response"]
    if only:
        pattern = re.compile(only)
        chosen = [c for c in chosen if pattern.search(c["id"])]
    return chosen


class Run:
    """One run against one server: each case, after its `given` steps, each case once."""

    def __init__(self, server, document, by_id, mock):
        self.server, self.document, self.by_id, self.mock = server, document, by_id, mock
        self.outcomes = {}

    def case(self, case):
        """The first difference of `case`'s answer (after its `given` steps), or None; a case
        already run (as another's step) is not sent again."""
        if case["id"] in self.outcomes:
            return self.outcomes[case["id"]]
        self.outcomes[case["id"]] = "(a step of itself)"
        outcome = self.given(case) or self.answer(case)
        self.outcomes[case["id"]] = outcome
        return outcome

    def given(self, case):
        for position, step in enumerate(case.get("given", [])):
            if isinstance(step, str):
                failed = self.case(self.by_id[step])
                if failed:
                    return f"given {step} failed: {failed}"
                continue
            status, _, raw = self.server.send(step["request"], step.get("auth"))
            if "status" in step and status != step["status"]:
                return f"given step {position} answered {status}, expected {step['status']}: {raw[:200].decode(errors='replace')}"
        return None

    def answer(self, case):
        prefer = {"Prefer": f"example={case['response']['example']}"} if self.mock else None
        status, headers, raw = self.server.send(case["request"], case.get("auth"), prefer)
        difference = check(case, status, headers, raw, self.document)
        if difference or not self.mock:
            return difference
        # A mock answers the very example asked for.
        example = named_example(self.document, case["operationId"], case["response"])
        return exact(example, json.loads(raw), "", set()) if example is not None else None


def named_example(document, operation_id, response):
    """The value of the document's example `response["example"]` of the operation's answer
    `response["status"]`, or None."""
    def deref(node):
        while isinstance(node, dict) and "$ref" in node:
            target = document
            for key in node["$ref"].removeprefix("#/").split("/"):
                target = target[key.replace("~1", "/").replace("~0", "~")]
            node = target
        return node

    for item in document.get("paths", {}).values():
        for op in item.values():
            if isinstance(op, dict) and op.get("operationId") == operation_id:
                answer = deref(op["responses"].get(str(response["status"]), {}))
                for media in answer.get("content", {}).values():
                    example = media.get("examples", {}).get(response["example"])
                    if example is not None:
                        return deref(example).get("value")
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True, help="the server under test, e.g. http://localhost:8080")
    parser.add_argument("--kit", help="the kit: a directory or a URL (default: beside this file, else the server's /conformance/)")
    for role in ("member", "admin", "outsider", "refresh"):
        parser.add_argument(f"--{role}-token", default="", help=f"the {role} token the cases' auth names")
    parser.add_argument("--document", help="the OpenAPI document (JSON or YAML file, or URL; default: the server's /openapi.json)")
    parser.add_argument("--only", help="run only the cases whose id matches this regular expression")
    parser.add_argument("--list", action="store_true", help="list the cases that would run, and run none")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request (30)")
    parser.add_argument("--mock", action="store_true", help="the server is a mock of the document: send the request cases that name their answer's example, with Prefer: example=…")
    args = parser.parse_args(argv)
    try:
        here = Path(__file__).resolve().parent
        source = args.kit or (str(here) if (here / "index.json").exists() else args.base_url.rstrip("/") + "/conformance/")
        document = load_document(args.document or args.base_url.rstrip("/") + "/openapi.json")
        cases, by_id = load_kit(source, document)
        chosen = server_cases(cases, args.only, args.mock)
        if args.list:
            print("\n".join(c["id"] for c in chosen))
            return 0
        if not chosen:
            raise KitError("no case selected")
        tokens = {"member": args.member_token, "admin": args.admin_token, "outsider": args.outsider_token}
        if args.mock:
            # A mock checks that a credential is sent, not which.
            tokens = {role: token or f"mock-{role}-token" for role, token in tokens.items()}
        server = Server(args.base_url, tokens, args.refresh_token or UNSPENT, args.timeout)
        run = Run(server, document, by_id, args.mock)
        failures = [f"{case['id']}: {difference}" for case in chosen if (difference := run.case(case))]
    except KitError as error:
        print(f"conformance: {error}", file=sys.stderr)
        return 2
    for failure in failures:
        print(f"FAIL {failure}")
    what = "request cases passed against the mock at" if args.mock else "server cases passed against"
    print(f"conformance: {len(chosen) - len(failures)} of {len(chosen)} {what} {args.base_url}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
