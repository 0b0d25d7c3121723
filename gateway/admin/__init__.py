"""Admin surface: the JSON API and the web console, behind SKILLGATE_ADMIN_TOKEN."""
