from sensors.models import model_partitions_sensor

all_sensors = [model_partitions_sensor]
