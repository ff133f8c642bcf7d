# scripts/schemathesis_hooks.py — Schemathesis hooks for scripts/schemathesis.sh.
#
# Each hook keeps the positive cases (the ones the document says the server
# takes) clear of one rule the document cannot state, named as in
# docs/operations.md, "What the API document cannot say". Negative cases are
# left as generated. A rule the document can state belongs in the document,
# not here.
import datetime

import schemathesis

ISSUED = set()


def _mode_is_positive(case):
    meta = getattr(case, "meta", None)
    return meta is not None and meta.generation.mode.is_positive


# Rule "page tokens": a page token is opaque: only one the server handed out
# names a page, and any other is refused (400 invalid_argument). A token
# Schemathesis makes up is schema-valid (base64 bytes) but names no page,
# so a made-up token is dropped (the first page is read) and only tokens
# the server returned are sent back.
def _made_up(token):
    # A token is a base64 string, or (as encoding/json also takes bytes) an array of byte values.
    if isinstance(token, list):
        return len(token) > 0
    return isinstance(token, str) and token != "" and token not in ISSUED


@schemathesis.hook
def after_call(context, case, response):
    try:
        body = response.json()
    except Exception:
        return
    if isinstance(body, dict) and isinstance(body.get("next_page_token"), str):
        ISSUED.add(body["next_page_token"])


# Rule "integers without a fraction": JSON Schema 2020-12 (OpenAPI 3.1's
# dialect) counts 34.0 as the integer 34; the server reads an integer field
# only from a number written as one (34).
def _whole(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    return value


@schemathesis.hook
def map_case(context, case):
    if not _mode_is_positive(case):
        return case
    if case.body is not None and not isinstance(case.body, (bytes, str)):
        case.body = _whole(case.body)
    if isinstance(case.body, dict) and _made_up(case.body.get("page_token")):
        case.body["page_token"] = None
    if case.query and _made_up(case.query.get("page_token")):
        del case.query["page_token"]
    return case


def _time(v):
    try:
        return datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except Exception:
        return None


# Rules "cron expressions", "time zone names" and "a schedule's end": a
# schedule's calendar is read by a cron parser, in a time zone of the
# server's zone database, and must have a fire time before its end. Positive
# cases get a calendar the parser takes, in UTC, without an end.
def _fix_schedule(sc):
    if not isinstance(sc, dict):
        return
    spec = sc.get("spec")
    if isinstance(spec, dict):
        spec["cron"] = ["@hourly"]
        spec.pop("time_zone", None)
        spec.pop("end", None)


@schemathesis.hook("map_case")
def fix_schedules(context, case):
    if not _mode_is_positive(case) or not isinstance(case.body, dict):
        return case
    _fix_schedule(case.body.get("schedule"))
    # Rule "a backfill's range": it runs forward and holds at most 10,000
    # fire times. Positive cases get a range of half a day.
    if "/backfill" in case.path:
        start = _time(case.body.get("start", "")) if isinstance(case.body.get("start"), str) else None
        if start is not None:
            case.body["end"] = (start + datetime.timedelta(hours=12)).isoformat()
    return case
