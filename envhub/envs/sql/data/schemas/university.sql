-- The university database: departments, instructors, students, courses, grades.
-- Rows: envs/sql/generators.py, seeded. Comments inside CREATE TABLE are kept by sqlite and shown
-- to the model with the schema: they say what codes and units mean.
CREATE TABLE departments (
  dept_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  building TEXT NOT NULL,
  budget REAL NOT NULL          -- yearly budget in EUR
);
CREATE TABLE instructors (
  instructor_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  dept_id INTEGER NOT NULL REFERENCES departments(dept_id),
  salary REAL NOT NULL,         -- yearly salary in EUR
  hire_year INTEGER NOT NULL
);
CREATE TABLE students (
  student_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  dept_id INTEGER NOT NULL REFERENCES departments(dept_id),  -- the student's major
  enrollment_year INTEGER NOT NULL,
  advisor_id INTEGER REFERENCES instructors(instructor_id)   -- NULL when none assigned
);
CREATE TABLE courses (
  course_id TEXT PRIMARY KEY,   -- e.g. 'CS101'
  title TEXT NOT NULL,
  dept_id INTEGER NOT NULL REFERENCES departments(dept_id),
  credits INTEGER NOT NULL
);
CREATE TABLE teaches (
  instructor_id INTEGER NOT NULL REFERENCES instructors(instructor_id),
  course_id TEXT NOT NULL REFERENCES courses(course_id),
  term TEXT NOT NULL,           -- e.g. '2023-fall' or '2024-spring'
  PRIMARY KEY (instructor_id, course_id, term)
);
CREATE TABLE enrollments (
  student_id INTEGER NOT NULL REFERENCES students(student_id),
  course_id TEXT NOT NULL REFERENCES courses(course_id),
  term TEXT NOT NULL,
  grade REAL,                   -- 0 to 20; NULL while the course is in progress
  PRIMARY KEY (student_id, course_id, term)
);
