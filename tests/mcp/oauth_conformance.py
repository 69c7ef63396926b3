"""The official MCP conformance suite's authorization-server scenarios
against agent-app's OAuth endpoints, with this script as the person.

The suite's `authorization` command checks the RFC 8414 metadata and runs an
authorization-code grant with PKCE: it prints the authorization URL for a
person to open, waits for the redirect on its own callback server, then
trades the code at the token endpoint and checks the answer. Here the script
registers the client (dynamic registration), reads the URL from the suite's
output, opens it without following redirects, approves the pending grant as
the app's own page does (its Origin), and follows the redirect back to the
suite. Exit status: the suite's, and 1 if any check failed or none ran.

Usage: oauth_conformance.py NODE SUITE_JS BASE_URL CALLBACK_PORT OUT_DIR
"""

import json
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def register(base, port):
    body = json.dumps({
        "client_name": "MCP conformance suite",
        "redirect_uris": [f"http://127.0.0.1:{port}/callback"],
        "token_endpoint_auth_method": "none",
    }).encode()
    req = urllib.request.Request(f"{base}/oauth/register", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 201, resp.status
        return json.load(resp)["client_id"]


def approve(base, url):
    """Opens `url` as the person's browser would and approves on the app's page."""
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(url, timeout=10)
        raise AssertionError("the authorization endpoint did not redirect")
    except urllib.error.HTTPError as e:
        assert e.code == 303, f"authorize answered {e.code}: {e.read()[:300]!r}"
        location = e.headers["Location"]
    match = re.fullmatch(r"/_/#grant=([a-z0-9]{15})", location)
    assert match, f"not the consent screen: {location}"
    grant = match.group(1)
    req = urllib.request.Request(
        f"{base}/api/_a2app/grants/{grant}/approve", data=b"{}", method="POST",
        headers={"Content-Type": "application/json", "Origin": base},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        decided = json.load(resp)
    assert decided["status"] == "active", decided
    # Back to the suite's callback server, as the browser would go (it may
    # start listening just after printing the URL).
    for attempt in range(50):
        try:
            with urllib.request.urlopen(decided["redirect"], timeout=10) as resp:
                resp.read()
            break
        except urllib.error.URLError:
            if attempt == 49:
                raise
            time.sleep(0.1)
    print(f"oauth_conformance.py: approved grant {grant}", flush=True)


def main():
    node, suite, base, port, out = sys.argv[1:6]
    client = register(base, port)
    cmd = [node, suite, "authorization", "--url", base, "--client-id", client, "--port", port,
           "--resource", f"{base}/mcp", "-o", out]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = []
    errors = []
    for line in proc.stdout:
        output.append(line)
        sys.stdout.write(line)
        if line.startswith(f"{base}/oauth/authorize?"):
            def consent(url=line.strip()):
                try:
                    approve(base, url)
                except Exception as e:  # reported below, and the suite times out
                    errors.append(repr(e))
            threading.Thread(target=consent, daemon=True).start()
    code = proc.wait()
    text = "".join(output)
    total = re.search(r"^Total: (\d+) passed, (\d+) failed", text, re.MULTILINE)
    passed, failed = (int(total.group(1)), int(total.group(2))) if total else (0, -1)
    # Both scenarios ran and passed every check: the metadata document (with
    # its Client ID Metadata Document check) and the authorization-code grant.
    scenarios = ["authorization-server-metadata-endpoint", "authorization-code-grant"]
    missing = [s for s in scenarios if not re.search(rf"^✓ {s}: [1-9]\d* passed, 0 failed$", text, re.MULTILINE)]
    if errors:
        print("oauth_conformance.py: " + "; ".join(errors), file=sys.stderr)
    if code != 0 or errors or failed != 0 or missing:
        print(f"oauth_conformance.py: exit {code}, {passed} passed, {failed} failed, not passed: {missing}", file=sys.stderr)
        sys.exit(1)
    print(f"oauth_conformance.py: {passed} checks passed in {len(scenarios)} scenarios")


if __name__ == "__main__":
    main()
