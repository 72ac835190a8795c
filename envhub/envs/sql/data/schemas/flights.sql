-- The flights database: airports, airlines, flights, passengers, bookings.
-- Rows: envs/sql/generators.py, seeded. Comments inside CREATE TABLE are kept by sqlite and shown
-- to the model with the schema: they say what codes and units mean.
CREATE TABLE airports (
  code TEXT PRIMARY KEY,        -- IATA code, e.g. 'LIS'
  name TEXT NOT NULL,
  city TEXT NOT NULL,
  country TEXT NOT NULL,
  elevation_m INTEGER NOT NULL
);
CREATE TABLE airlines (
  airline_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  iata TEXT NOT NULL,           -- two-letter code used in flight numbers
  country TEXT NOT NULL
);
CREATE TABLE aircraft (
  aircraft_id INTEGER PRIMARY KEY,
  model TEXT NOT NULL,
  manufacturer TEXT NOT NULL,
  seats INTEGER NOT NULL
);
CREATE TABLE flights (
  flight_id INTEGER PRIMARY KEY,
  flight_no TEXT NOT NULL,      -- airline IATA code + number, e.g. 'TP1234'
  airline_id INTEGER NOT NULL REFERENCES airlines(airline_id),
  origin TEXT NOT NULL REFERENCES airports(code),
  destination TEXT NOT NULL REFERENCES airports(code),
  aircraft_id INTEGER NOT NULL REFERENCES aircraft(aircraft_id),
  departure TEXT NOT NULL,      -- local time 'YYYY-MM-DD HH:MM'
  duration_min INTEGER NOT NULL,
  distance_km INTEGER NOT NULL,
  status TEXT NOT NULL,         -- 'on_time', 'delayed' or 'cancelled'
  delay_min INTEGER             -- minutes late; NULL unless status is 'delayed'
);
CREATE TABLE passengers (
  passenger_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  nationality TEXT NOT NULL,
  birth_year INTEGER NOT NULL
);
CREATE TABLE bookings (
  booking_id INTEGER PRIMARY KEY,
  flight_id INTEGER NOT NULL REFERENCES flights(flight_id),
  passenger_id INTEGER NOT NULL REFERENCES passengers(passenger_id),
  seat_class TEXT NOT NULL,     -- 'economy', 'business' or 'first'
  price REAL NOT NULL           -- EUR paid
);
