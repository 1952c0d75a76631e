"""Verifies Standard Webhooks signatures with Python's standard library only:
an implementation independent of chat's Go one. Reads a JSON list of
{secret, id, timestamp, body_b64, signature} on stdin; prints how many it
verified; exits 1 naming the first that does not verify."""
import base64
import hashlib
import hmac
import json
import sys


def verify(r):
    secret = r["secret"]
    if not secret.startswith("whsec_"):
        return "secret without whsec_"
    key = base64.b64decode(secret[len("whsec_"):])
    body = base64.b64decode(r["body_b64"])
    signed = r["id"].encode() + b"." + r["timestamp"].encode() + b"." + body
    want = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for part in r["signature"].split(" "):
        version, _, sig = part.partition(",")
        if version == "v1" and hmac.compare_digest(sig, want):
            return None
    return "no v1 signature matches"


def main():
    reqs = json.load(sys.stdin)
    for i, r in enumerate(reqs):
        err = verify(r)
        if err:
            print("request %d (%s): %s" % (i, r.get("id"), err))
            sys.exit(1)
    print(len(reqs))


main()
