"""serve's machinery, under the faces: report workers, the sync queue and its typed jobs, liveness, health, the Home tab's thread."""
