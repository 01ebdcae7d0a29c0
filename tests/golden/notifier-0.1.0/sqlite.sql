-- The notifier schema as vigil 0.1.0 created it on sqlite: `metadata.create_all` of notifier/schema.py
-- at commit fd5e538 (SQLAlchemy 2.1.9), before Alembic. Frozen: the migration tests build
-- an old database from it. Never edit.

CREATE TABLE incidents (
	id INTEGER NOT NULL,
	group_key TEXT NOT NULL,
	status VARCHAR(16) NOT NULL,
	opened_at FLOAT NOT NULL,
	resolved_at FLOAT,
	labels TEXT NOT NULL,
	title TEXT NOT NULL,
	PRIMARY KEY (id)
);

CREATE UNIQUE INDEX one_firing_incident_per_group ON incidents (group_key) WHERE status = 'firing';

CREATE TABLE incident_alerts (
	incident_id INTEGER NOT NULL,
	alert_key TEXT NOT NULL,
	PRIMARY KEY (incident_id, alert_key),
	FOREIGN KEY(incident_id) REFERENCES incidents (id)
);

CREATE TABLE notifications (
	id INTEGER NOT NULL,
	dedup_key VARCHAR(64) NOT NULL,
	received_at FLOAT NOT NULL,
	group_key TEXT NOT NULL,
	status VARCHAR(16) NOT NULL,
	receiver TEXT NOT NULL,
	incident_id INTEGER NOT NULL,
	payload TEXT NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (dedup_key),
	FOREIGN KEY(incident_id) REFERENCES incidents (id)
);

CREATE TABLE deliveries (
	id INTEGER NOT NULL,
	notification_id INTEGER NOT NULL,
	incident_id INTEGER NOT NULL,
	target TEXT NOT NULL,
	channel_index INTEGER NOT NULL,
	channel_type VARCHAR(32) NOT NULL,
	page_status VARCHAR(16) NOT NULL,
	title TEXT NOT NULL,
	body TEXT NOT NULL,
	state VARCHAR(16) NOT NULL,
	attempts INTEGER NOT NULL,
	next_attempt_at FLOAT NOT NULL,
	created_at FLOAT NOT NULL,
	sent_at FLOAT,
	last_error TEXT,
	PRIMARY KEY (id),
	UNIQUE (notification_id, target, channel_index),
	FOREIGN KEY(notification_id) REFERENCES notifications (id),
	FOREIGN KEY(incident_id) REFERENCES incidents (id)
);

CREATE INDEX deliveries_due ON deliveries (state, next_attempt_at);

CREATE TABLE delivery_attempts (
	id INTEGER NOT NULL,
	delivery_id INTEGER NOT NULL,
	at FLOAT NOT NULL,
	ok BOOLEAN NOT NULL,
	error TEXT,
	duration_s FLOAT NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(delivery_id) REFERENCES deliveries (id)
);

CREATE TABLE inbox_pages (
	id INTEGER NOT NULL,
	delivery_id INTEGER,
	time FLOAT NOT NULL,
	recipient TEXT NOT NULL,
	channel VARCHAR(32) NOT NULL,
	title TEXT NOT NULL,
	body TEXT NOT NULL,
	incident_id INTEGER,
	status VARCHAR(16) NOT NULL,
	labels TEXT NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (delivery_id),
	FOREIGN KEY(delivery_id) REFERENCES deliveries (id),
	FOREIGN KEY(incident_id) REFERENCES incidents (id)
);
