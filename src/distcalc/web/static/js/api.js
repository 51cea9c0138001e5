// POST/GET the JSON API; a 422 becomes an ApiError carrying the field and the CLI's message.
export class ApiError extends Error {
  constructor(body, status) { super(body.error || `HTTP ${status}`); this.field = body.field || ""; this.status = status;
    this.fields = (body.detail || []).map((d) => d.field).filter((f) => f); }
}
export async function api(path, body) {
  const init = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw new ApiError(data, response.status);
  return data;
}
