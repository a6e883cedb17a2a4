// Who is signed in, and what happens when the session ends.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { keys } from "./keys";

export function useMe() {
  return useQuery({
    queryKey: keys.me(),
    queryFn: () => unwrap(api.GET("/api/auth/me")),
    staleTime: 60_000,
    retry: false,
  });
}
