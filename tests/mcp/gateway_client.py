"""Interop: the official Python MCP client (mcp 2.3.0) drives `a2app mcp`, the
gateway, over stdio: the client spawns it, as an MCP host without a shell does.

    gateway_client.py A2APP CONFIG_DIR MODE      (MODE: auto | legacy | 2026-07-28)

A2APP is the a2app binary; CONFIG_DIR the config directory in which a served
kanban app registered itself. Lists the gateway's tools and apps, writes a list
and a card given its list by label and its due date as "tomorrow" (then reads
it back over plain HTTP), and checks two refusals: the app guard's and the
gateway's own. Then, as a host that can ask its person (an elicitation
callback), runs a destructive operation: the person is asked (within the call
in the legacy era, by input_required and a repeat in 2026-07-28), a no runs
nothing, a yes runs it, and the agent never sees the approval key. Exits
non-zero on any mismatch.
"""

import asyncio
import json
import sys
import urllib.request

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client


def check(cond: bool, what: str) -> None:
    if not cond:
        raise SystemExit(f"FAIL [gateway {MODE}] {what}")
    print(f"ok [gateway {MODE}] {what}")


def fenced(text: str) -> str:
    """The data inside a gateway answer's fence: a note line naming the
    boundary, the opening line, the text, the closing line with that boundary."""
    lines = text.split("\n")
    check(len(lines) >= 4 and lines[1].startswith("<<<a2app-data ") and lines[-1].startswith("<<<end a2app-data "),
          f"the answer is fenced: {text[:200]}")
    boundary = lines[1][len("<<<a2app-data "):].rstrip(">")
    check(boundary in lines[0] and lines[-1] == f"<<<end a2app-data {boundary}>>>", "one boundary, both lines")
    return "\n".join(lines[2:-1])


async def main(binary: str, config_dir: str) -> None:
    server = StdioServerParameters(command=binary, args=["mcp"], env={"A2APP_CONFIG_DIR": config_dir})
    async with Client(stdio_client(server), mode=MODE, cache=None) as client:
        check(client.protocol_version == ("2025-11-25" if MODE == "legacy" else "2026-07-28"),
              f"negotiated {client.protocol_version}")
        tools = [t.name for t in (await client.list_tools()).tools]
        check(tools == ["apps", "search_apps", "describe", "query", "get", "create", "update", "delete",
                        "run_operation", "job_status", "check_claims", "whoami", "requests", "claim_request", "answer_request"],
              f"tools {tools}")

        apps = (await client.call_tool("apps", {})).structured_content["apps"]
        check([(a["app"], a["status"]) for a in apps] == [("kanban", "running")], f"apps {apps}")
        base = apps[0]["url"]

        name = f"Gateway {MODE}"
        made = await client.call_tool("create", {"app": "kanban", "entity": "lists", "record": {"name": name}})
        check(not made.is_error and fenced(made.content[0].text) == f'Added "{name}" to lists', made.content[0].text)
        list_id = made.structured_content["id"]
        card = await client.call_tool(
            "create",
            {"app": "kanban", "entity": "cards",
             "record": {"title": f"Card via {MODE}", "list": name, "due_date": "tomorrow"}},
        )
        text = fenced(card.content[0].text)
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

    # A host that can ask its person. The person answers `answers` in turn.
    answers: list[bool] = [False, True]
    asked: list[str] = []

    async def person(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": answers.pop(0)})

    async with Client(stdio_client(server), mode=MODE, cache=None, elicitation_callback=person) as client:
        done = await client.call_tool("run_operation", {"app": "kanban", "name": "complete_card",
                                                        "params": {"card": card_id}})
        check(not done.is_error, "the card is marked done")

        async def count() -> int:
            page = await client.call_tool("query", {"app": "kanban", "entity": "cards", "filter": "done = true"})
            return page.structured_content["totalItems"]

        before = await count()
        no = await client.call_tool("run_operation", {"app": "kanban", "name": "clear_done"})
        check(no.is_error and no.structured_content["code"] == "declined", f"a no runs nothing: {no.content[0].text}")
        check(await count() == before, "nothing was deleted")
        yes = await client.call_tool("run_operation", {"app": "kanban", "name": "clear_done"})
        check(not yes.is_error and len(yes.structured_content["receipts"]) == before, f"a yes runs it: {yes.content[0].text}")
        check(await count() == 0, "the done cards are gone")
        check(len(asked) == 2 and all('"clear_done"' in m for m in asked), f"the person was asked twice: {asked}")
        check("approvalKey" not in json.dumps([no.structured_content, yes.structured_content]), "the agent never saw the key")


MODE = sys.argv[3]
asyncio.run(main(sys.argv[1], sys.argv[2]))
