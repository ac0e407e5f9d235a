from assets import feedback_automation
from sensors.inbox import inbox_sensor
from sensors.platform_repo import platform_repo_sensor

all_sensors = [platform_repo_sensor, inbox_sensor, feedback_automation]
