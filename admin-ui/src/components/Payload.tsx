// A message's payload (pretty JSON, text or hex) with a copy button, and its metadata: the message drawer's and
// the message log's entries show them alike.
import { useState } from "react";
import { showPayload } from "../lib/format";

export function Payload({ payload, metadata }: { payload: string; metadata: unknown }) {
  const [copied, setCopied] = useState(false);
  const shown = showPayload(payload);
  const copy = async () => {
    await navigator.clipboard?.writeText(shown.text);
    setCopied(true);
  };
  return (
    <>
      <div className="row between">
        <h3>
          Payload <span className="muted">({shown.kind})</span>
        </h3>
        <button type="button" onClick={copy}>
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard */}
      <pre className="payload" tabIndex={0}>
        {shown.text}
      </pre>
      <h3>Metadata</h3>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard */}
      <pre className="payload" tabIndex={0}>
        {metadata ? JSON.stringify(metadata, null, 2) : "–"}
      </pre>
    </>
  );
}
