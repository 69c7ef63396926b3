"""Interop: the official Python MCP client (mcp 2.3.0) drives `a2app mcp`, the
gateway, over stdio: the client spawns it, as an MCP host without a shell does.

    gateway_client.py A2APP CONFIG_DIR MODE      (MODE: auto | legacy | 2026-07-28)

A2APP is the a2app binary; CONFIG_DIR the config directory in which a served
kanban app registered itself. Lists the gateway's tools and apps, writes a list
and a card given its list by label and its due date as "tomorrow" (then reads
it back over plain HTTP), and checks two refusals: the app guard's and the
gateway's own. Exits non-zero on any mismatch.
"""

import asyncio
import json
import sys
import urllib.request

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client


def check(cond: bool, what: str) -> None:
    if not cond:
        raise SystemExit(f"FAIL [gateway {MODE}] {what}")
    print(f"ok [gateway {MODE}] {what}")


async def main(binary: str, config_dir: str) -> None:
    server = StdioServerParameters(command=binary, args=["mcp"], env={"A2APP_CONFIG_DIR": config_dir})
    async with Client(stdio_client(server), mode=MODE, cache=None) as client:
        check(client.protocol_version == ("2025-11-25" if MODE == "legacy" else "2026-07-28"),
              f"negotiated {client.protocol_version}")
        tools = [t.name for t in (await client.list_tools()).tools]
        check(tools == ["apps", "describe", "query", "get", "create", "update", "delete", "run_operation",
                        "job_status", "whoami"], f"tools {tools}")

        apps = (await client.call_tool("apps", {})).structured_content["apps"]
        check([(a["app"], a["status"]) for a in apps] == [("kanban", "running")], f"apps {apps}")
        base = apps[0]["url"]

        name = f"Gateway {MODE}"
        made = await client.call_tool("create", {"app": "kanban", "entity": "lists", "record": {"name": name}})
        check(not made.is_error and made.content[0].text == f'Added "{name}" to lists', made.content[0].text)
        list_id = made.structured_content["id"]
        card = await client.call_tool(
            "create",
            {"app": "kanban", "entity": "cards",
             "record": {"title": f"Card via {MODE}", "list": name, "due_date": "tomorrow"}},
        )
        text = card.content[0].text
        check(not card.is_error and text.startswith(f'Added "Card via {MODE}" to {name}'), f"card: {text}")
        check("Read as: due_date: tomorrow" in text, "the date word is read in the app's calendar")
        card_id = card.structured_content["id"]
        with urllib.request.urlopen(f"{base}/api/collections/cards/records/{card_id}", timeout=10) as resp:
            stored = json.load(resp)
        check(stored["list"] == list_id and stored["due_date"].endswith("00:00:00.000Z"), "stored as resolved")

        bad = await client.call_tool(
            "create", {"app": "kanban", "entity": "cards", "record": {"title": "x", "list": list_id, "points": 500}}
        )
        check(bad.is_error and bad.structured_content["code"] == "out_of_range", "the guard's refusal")
        check(bad.structured_content["field"] == "points", "names the field")

        elsewhere = await client.call_tool("query", {"app": "https://example.com", "entity": "cards"})
        check(elsewhere.is_error and elsewhere.structured_content["code"] == "unknown_app", "a URL it was not given")


MODE = sys.argv[3]
asyncio.run(main(sys.argv[1], sys.argv[2]))
