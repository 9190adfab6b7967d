"""Build the ApplicationSubmissionContext JSON that `POST /ws/v1/cluster/apps` takes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LocalResource:
    """A file the NodeManager downloads into the container's working directory."""

    url: str            # e.g. hdfs://nn:9000/user/me/app.jar
    size: int           # bytes, as the file system reports it
    timestamp_ms: int   # modification time, as the file system reports it
    type: str = "FILE"  # FILE, ARCHIVE or PATTERN
    visibility: str = "APPLICATION"

    def to_json(self) -> dict[str, Any]:
        return {"resource": self.url, "type": self.type, "visibility": self.visibility,
                "size": self.size, "timestamp": self.timestamp_ms}


@dataclass(frozen=True)
class AppSubmission:
    """What an ApplicationMaster container needs: its command, files, environment and size."""

    name: str
    command: str        # YARN expands {{JAVA_HOME}}, <LOG_DIR>, <CPS>
    memory_mb: int = 256
    vcores: int = 1
    application_type: str = "YARN"
    queue: str = "default"
    priority: int = 0
    max_attempts: int = 1
    local_resources: dict[str, LocalResource] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)

    def to_json(self, app_id: str) -> dict[str, Any]:
        """The context for an id reserved with `ResourceManagerClient.new_application()`."""
        return {
            "application-id": app_id,
            "application-name": self.name,
            "queue": self.queue,
            "priority": self.priority,
            "am-container-spec": {
                "local-resources": {"entry": [{"key": key, "value": res.to_json()}
                                              for key, res in sorted(self.local_resources.items())]},
                "commands": {"command": self.command},
                "environment": {"entry": [{"key": k, "value": v}
                                          for k, v in sorted(self.environment.items())]},
            },
            "unmanaged-AM": False,
            "max-app-attempts": self.max_attempts,
            "resource": {"memory": self.memory_mb, "vCores": self.vcores},
            "application-type": self.application_type,
            "keep-containers-across-application-attempts": False,
        }
