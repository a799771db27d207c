#!/usr/bin/python3
"""Reads a /metrics scrape on stdin and checks it with the Prometheus
project's own text parser (python3-prometheus-client). Prints one JSON
object per sample: {"name", "labels", "value"}; exits 1 with the parser's
error when the text is not valid exposition format, 3 when the parser is
not installed (the test skips then)."""
import json
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("python3-prometheus-client is not installed", file=sys.stderr)
    sys.exit(3)

text = sys.stdin.read()
try:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            print(json.dumps({"name": s.name, "labels": s.labels, "value": s.value,
                              "family_type": family.type}))
except Exception as e:  # the parser raises ValueError and friends
    print(f"not valid Prometheus text: {e}", file=sys.stderr)
    sys.exit(1)
