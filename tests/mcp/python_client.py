"""Interop: the official Python MCP client (mcp 2.3.0) drives agent-app's /mcp.

    python_client.py URL TOKEN MODE      (MODE: auto | legacy | 2026-07-28)

Lists tools, reads the describe resource, queries, creates a valid record
(then reads it over the plain HTTP records API) and sends an invalid one
(an isError result carrying invalid_date). Exits non-zero on any mismatch.
"""

import asyncio
import json
import sys
import urllib.request

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def check(cond: bool, what: str) -> None:
    if not cond:
        raise SystemExit(f"FAIL [{MODE}] {what}")
    print(f"ok [{MODE}] {what}")


async def main(url: str, token: str) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=20)
    async with Client(streamable_http_client(url, http_client=http), mode=MODE, cache=None) as client:
        check(client.protocol_version == ("2025-11-25" if MODE == "legacy" else "2026-07-28"),
              f"negotiated {client.protocol_version}")
        tools = [t.name for t in (await client.list_tools()).tools]
        check(tools == ["describe", "query", "get", "create", "update", "delete", "run_operation", "job_status", "check_claims"], f"tools {tools}")

        describe = await client.read_resource("a2app://describe")
        doc = json.loads(describe.contents[0].text)
        check(doc["app"]["id"] == "kanban", "describe resource names the app")

        made = await client.call_tool("create", {"entity": "lists", "record": {"name": f"Py {MODE}"}})
        check(not made.is_error, f"create list: {made.content[0].text}")
        list_id = made.structured_content["id"]
        card = await client.call_tool(
            "create",
            {"entity": "cards", "record": {"title": f"Card {MODE}", "list": list_id, "due_date": "2026-07-31"}},
        )
        check(not card.is_error and card.content[0].text.startswith("Added"), f"create card: {card.content[0].text}")
        card_id = card.structured_content["id"]

        base = url.rsplit("/mcp", 1)[0]
        with urllib.request.urlopen(f"{base}/api/collections/cards/records/{card_id}", timeout=10) as resp:
            over_http = json.load(resp)
        check(over_http["title"] == f"Card {MODE}", "the card is seen over plain HTTP")

        page = await client.call_tool("query", {"entity": "cards", "filter": f"list = '{list_id}'"})
        check(page.structured_content["totalItems"] == 1, "query finds it")

        done = await client.call_tool("run_operation", {"name": "complete_card", "params": {"card": card_id}})
        check(not done.is_error and done.structured_content["receipts"][0]["action"] == "update", "run_operation")

        bad = await client.call_tool("create", {"entity": "cards", "record": {"title": "x", "list": list_id, "due_date": "tomorrow"}})
        check(bad.is_error and bad.structured_content["code"] == "invalid_date", "invalid create is an isError invalid_date")

        # The agent's message for its person, checked against what this client stored.
        claim = await client.call_tool("check_claims", {"message": f"I added 'Card {MODE}' to 'Py {MODE}' and deleted 'Old'."})
        check(not claim.is_error and claim.structured_content["verdict"] == "withheld"
              and [d["reason"] for d in claim.structured_content["discrepancies"]] == ["no_write"],
              f"a claim of a delete never made is withheld: {claim.content[0].text}")
        honest = await client.call_tool("check_claims", {"message": f"I added 'Card {MODE}' to 'Py {MODE}'."})
        check(honest.structured_content["verdict"] == "pass", f"the honest message passes: {honest.content[0].text}")
        check(bad.structured_content["violations"][0]["field"] == "due_date", "the violation names the field")


MODE = sys.argv[3]
asyncio.run(main(sys.argv[1], sys.argv[2]))
