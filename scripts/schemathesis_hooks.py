# scripts/schemathesis_hooks.py — Schemathesis hooks for scripts/schemathesis.sh.
#
# A page token is opaque: only one the server handed out names a page, and
# any other is refused (400 invalid_argument). A token Schemathesis makes up
# is schema-valid (base64 bytes) but names no page, so in positive cases a
# made-up token is dropped (the first page is read) and only tokens the
# server returned are sent back; negative cases are left as generated.
import schemathesis

ISSUED = set()


def _mode_is_positive(case):
    meta = getattr(case, "meta", None)
    return meta is not None and meta.generation.mode.is_positive


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


# OpenAPI 3.0 cannot bound a map's keys. The document states the bound in
# the map's description and as JSON Schema's propertyNames, which
# Schemathesis does not apply everywhere (its stateful phase made a
# 43-character attribute key), so positive cases keep their map keys
# within the bounds the server enforces (store.MaxAttributeKey, and the
# memo's and a namespace's data's maxkey); negative cases are left alone.
MAX_KEY = {"attributes": 32, "memo": 128, "data": 128}


def _bound_keys(value):
    if isinstance(value, list):
        for v in value:
            _bound_keys(v)
        return
    if not isinstance(value, dict):
        return
    for name, v in value.items():
        limit = MAX_KEY.get(name)
        if limit is not None and isinstance(v, dict):
            # Attribute keys are kept as text too: no NUL (propertyNames
            # says so, and goes unheeded as well).
            for k in [k for k in v if len(k) > limit or (name == "attributes" and "\x00" in k)]:
                del v[k]
        _bound_keys(v)


@schemathesis.hook
def map_case(context, case):
    if not _mode_is_positive(case):
        return case
    _bound_keys(case.body)
    if isinstance(case.body, dict) and _made_up(case.body.get("page_token")):
        case.body["page_token"] = None
    if case.query and _made_up(case.query.get("page_token")):
        del case.query["page_token"]
    return case


# A schedule's spec is read by a cron parser, and a backfill's range must
# run forward and stay under 10,000 fire times: rules a schema cannot state.
# Positive cases get a spec the parser takes and a range of at most a day
# that runs forward; the keys a schedule sets itself are dropped from its
# action. Negative cases are left alone.
import datetime


def _time(v):
    try:
        return datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except Exception:
        return None


def _fix_schedule(sc):
    if not isinstance(sc, dict):
        return
    spec = sc.get("spec")
    if isinstance(spec, dict):
        spec["cron"] = ["@hourly"]
        spec.pop("time_zone", None)
        spec.pop("end", None)
        if isinstance(spec.get("jitter"), int) and spec["jitter"] > 24 * 3600 * 10**9:
            spec["jitter"] = 0
    action = sc.get("action")
    if isinstance(action, dict):
        if isinstance(action.get("memo"), dict):
            action["memo"].pop("strand.scheduled_time", None)
        if isinstance(action.get("attributes"), dict):
            action["attributes"].pop("strand.schedule", None)


@schemathesis.hook("map_case")
def fix_schedules(context, case):
    if not _mode_is_positive(case) or not isinstance(case.body, dict):
        return case
    _fix_schedule(case.body.get("schedule"))
    # A reset before an event names the event (1 or more): a rule between
    # two fields.
    if case.body.get("point") == "before_event" and not (isinstance(case.body.get("event_id"), int) and case.body["event_id"] >= 1):
        case.body["event_id"] = 1
    if case.body.get("reset_point") == "before_event" and not (isinstance(case.body.get("reset_event_id"), int) and case.body["reset_event_id"] >= 1):
        case.body["reset_event_id"] = 1
    # A signal batch names its signal.
    if case.body.get("operation") == "signal" and not case.body.get("signal_name"):
        case.body["signal_name"] = "example"
    if "/backfill" in case.path:
        start = _time(case.body.get("start", "")) if isinstance(case.body.get("start"), str) else None
        if start is not None:
            case.body["end"] = (start + datetime.timedelta(hours=12)).isoformat()
    return case
