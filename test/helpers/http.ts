// One API call over real HTTP with a bearer token, for tests that run a listening server.
/** Sends `body` as JSON when given; answers the status and the parsed JSON body (undefined when empty). */
export async function callApi(baseUrl: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}
